package relay

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// sveMagic starts every .sve ("SVE1"): five little-endian int32 (magic,
// n_tokens, nx, ny, n_embd), then n_tokens x n_embd float32.
const sveMagic = 0x31455653

// parseOK parses "OK n nx ny ms": exactly four non-negative integers, one
// line. Anything else is not a result.
func parseOK(line string) (f [4]int, ok bool) {
	if strings.ContainsAny(line, "\r\n") || !strings.HasPrefix(line, "OK ") {
		return f, false
	}
	parts := strings.Split(line[3:], " ")
	if len(parts) != 4 {
		return f, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p != strconv.Itoa(n) {
			return f, false
		}
		f[i] = n
	}
	return f, true
}

// checkResult holds a second PC's result to what Strata will read: one "OK n
// nx ny ms" line whose n, nx and ny are those of the .sve beside it, whose
// n_embd is the one Strata was told (nEmbd; 0: not known), and whose size is
// exactly its header's. An agent (or whoever answers in its place) cannot
// hand Strata a second line or a result that says something else.
func checkResult(line, sve string, nEmbd int) error {
	f, ok := parseOK(line)
	if !ok {
		return fmt.Errorf("the second PC's reply %s is not one line OK <n> <nx> <ny> <ms>", strconv.Quote(clipReply(line)))
	}
	fh, err := os.Open(sve)
	if err != nil {
		return fmt.Errorf("the result cannot be read: %v", errText(err))
	}
	defer fh.Close()
	var h [5]int32
	if err := binary.Read(io.LimitReader(fh, 20), binary.LittleEndian, &h); err != nil {
		return fmt.Errorf("the second PC's result is shorter than its header")
	}
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	switch {
	case uint32(h[0]) != sveMagic:
		return fmt.Errorf("the second PC's result is not an .sve file")
	case int(h[1]) != f[0] || int(h[2]) != f[1] || int(h[3]) != f[2]:
		return fmt.Errorf("the second PC's reply (%d tokens, %dx%d) does not match its result (%d tokens, %dx%d)", f[0], f[1], f[2], h[1], h[2], h[3])
	case nEmbd > 0 && int(h[4]) != nEmbd:
		return fmt.Errorf("the second PC's result has n_embd %d, Strata was told %d; run `strata-service remote prepare` again", h[4], nEmbd)
	case h[4] <= 0 || st.Size() != 20+int64(h[1])*int64(h[4])*4:
		return fmt.Errorf("the second PC's result is %d bytes, its header says %d", st.Size(), 20+int64(h[1])*int64(h[4])*4)
	}
	return nil
}

// replyLine makes whatever Encode returned one line Strata can take: a
// well-formed OK line, or ERR with line breaks folded. Every request gets
// exactly one line, whatever an encoder printed.
func replyLine(s string) string {
	if _, ok := parseOK(s); ok {
		return s
	}
	if strings.HasPrefix(s, "ERR ") {
		return "ERR " + oneLine(s[4:])
	}
	return "ERR the encoder's reply " + strconv.Quote(clipReply(s)) + " is not OK <n> <nx> <ny> <ms>"
}

func clipReply(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
