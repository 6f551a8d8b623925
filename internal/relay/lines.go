package relay

import (
	"bufio"
	"context"
	"errors"
	"io"
)

// MaxLine bounds a request line (Strata's are a few hundred bytes): a longer
// one is read to its end without being kept, and answered with ERR.
const MaxLine = 1 << 20

type inLine struct {
	s       string
	tooLong bool
}

// readLines sends each line of in (without its newline) to lines, and the
// reason the input ended (nil at EOF) to errc.
func readLines(ctx context.Context, in io.Reader, max int, lines chan<- inLine, errc chan<- error) {
	br := bufio.NewReaderSize(in, 64<<10)
	var buf []byte
	tooLong := false
	send := func(l inLine) bool {
		select {
		case lines <- l:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			n := len(buf) + len(chunk)
			if n > 0 && len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				n-- // the newline is not part of the line
			}
			if n > max {
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil || (err == io.EOF && (len(buf) > 0 || tooLong)) {
			var l inLine
			if tooLong {
				l.tooLong = true
			} else {
				n := len(buf)
				if n > 0 && buf[n-1] == '\n' {
					n--
				}
				l.s = string(buf[:n])
			}
			buf, tooLong = buf[:0], false
			if !send(l) {
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			select {
			case errc <- err:
			case <-ctx.Done():
			}
			return
		}
	}
}
