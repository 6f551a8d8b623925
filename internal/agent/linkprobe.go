package agent

import (
	"github.com/strata-companion/companion/internal/agentcmd"

	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/version"
)

// The link probe's subcommands (framing.ProbeInfo says what they print):
// `probe`, `sink` and `source N`, so that `strata-service probe --ssh`
// learns the second PC's OS, GPUs, files and link speed through a key that
// runs only the agent.

// ProbeArgs are `<agent> probe`'s arguments, checked.
type ProbeArgs struct {
	// Encoder is the --encoder asked about ("" none): a name in the agent's
	// folder, or any path when the agent runs on its own (through the gate:
	// inside its folder or the encoder pinned at pairing).
	Encoder string
	// Files are the --file names: inside the agent's folder only.
	Files []string
}

// ParseProbeArgs reads `<agent> probe`'s arguments (without "probe"); dir is
// the agent's folder. A --file outside it (an absolute path elsewhere, a
// ".." step) is refused, as stat refuses it.
func ParseProbeArgs(args []string, dir string) (ProbeArgs, error) {
	c, err := agentcmd.ParseArgs(append([]string{string(agentcmd.VerbProbe)}, args...))
	if err != nil {
		return ProbeArgs{}, err
	}
	for _, f := range c.Probe.Files {
		if _, err := probeFilePath(dir, f); err != nil {
			return ProbeArgs{}, err
		}
	}
	return ProbeArgs{Encoder: c.Probe.Encoder, Files: c.Probe.Files}, nil
}

// probeFilePath is where --file name is: inside dir, or refused.
func probeFilePath(dir, name string) (string, error) {
	if hasDotDot(name) {
		return "", fmt.Errorf("probe: --file %q steps out with \"..\"; the agent answers only about its own folder", name)
	}
	p := name
	if !filepath.IsAbs(p) {
		if filepath.VolumeName(p) != "" || strings.HasPrefix(p, `\`) || strings.HasPrefix(p, "/") {
			return "", fmt.Errorf("probe: --file %q is not a name in the agent's folder", name)
		}
		p = filepath.Join(dir, p)
	}
	if !inside(dir, p) {
		return "", fmt.Errorf("probe: --file %q is outside the agent's folder %s; the agent answers only about its own files", name, dir)
	}
	return filepath.Clean(p), nil
}

func hasDotDot(p string) bool {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return true
		}
	}
	return false
}

// Probe is `<agent> probe`: one JSON line (framing.ProbeInfo) about this PC
// on stdout. nvidiaSMI overrides the program ("" finds it as the local
// probe does: PATH, then where drivers put it).
func Probe(ctx context.Context, args []string, nvidiaSMI string, stdout, stderr io.Writer) int {
	dir := ""
	if exe, err := os.Executable(); err == nil {
		if s, err := filepath.EvalSymlinks(exe); err == nil {
			exe = s
		}
		dir = filepath.Dir(exe)
	}
	a, err := ParseProbeArgs(args, dir)
	if err != nil {
		fmt.Fprintln(stderr, "strata-vision-relay "+err.Error())
		return 2
	}
	info := ProbeThisPC(ctx, a, dir, nvidiaSMI)
	b, err := json.Marshal(info)
	if err != nil {
		fmt.Fprintln(stderr, "strata-vision-relay probe:", err)
		return 1
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", b); err != nil {
		return 1
	}
	return 0
}

// ProbeThisPC gathers a's facts about this PC, dir being the agent's folder.
func ProbeThisPC(ctx context.Context, a ProbeArgs, dir, nvidiaSMI string) framing.ProbeInfo {
	info := framing.ProbeInfo{Version: version.Version, OS: runtime.GOOS, Arch: runtime.GOARCH, Dir: dir,
		Uname: unameLine(ctx), Files: []framing.ProbeFile{}, GGUF: []string{}}
	if cands := nvsmi.Candidates(nvidiaSMI, nil, nil); len(cands) > 0 {
		info.NvidiaSMIFound, info.NvidiaSMI = true, cands[0]
		run := nvsmi.Local(cands[0], nvsmi.DefaultTimeout)
		// The probe's own sequence (the rich query, the basic one when the
		// driver refuses it, the MIG one), recorded raw for the companion,
		// which reads it with the same reader.
		nvsmi.Query(ctx, func(ctx context.Context, args []string) ([]byte, error) {
			out, err := run(ctx, args)
			info.Nvidia = append(info.Nvidia, nvidiaRun(args, out, err))
			return out, err
		}, "", true)
	}
	if a.Encoder != "" {
		p := a.Encoder
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		info.Encoder = &framing.ProbeFile{Name: a.Encoder, Path: p, Present: isFilePresent(p)}
	}
	for _, f := range a.Files {
		p, err := probeFilePath(dir, f)
		if err != nil { // checked by ParseProbeArgs already
			continue
		}
		info.Files = append(info.Files, framing.ProbeFile{Name: f, Path: p, Present: isFilePresent(p)})
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".gguf") {
				info.GGUF = append(info.GGUF, e.Name())
			}
		}
		sort.Strings(info.GGUF)
	}
	return info
}

func isFilePresent(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func nvidiaRun(args []string, out []byte, err error) framing.NvidiaRun {
	r := framing.NvidiaRun{Args: strings.Join(args, " "), Output: string(out), Status: 0}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Status = ee.ExitCode()
	case errors.Is(err, nvsmi.ErrNotFound):
		r.Status, r.Error, r.Detail = -1, framing.NvidiaNotFound, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		r.Status, r.Error, r.Detail = -1, framing.NvidiaTimeout, err.Error()
	default:
		r.Status, r.Error, r.Detail = -1, framing.NvidiaStartFailed, err.Error()
	}
	return r
}

// Sink is `<agent> sink`: "R" once it reads, then, at the end of its input,
// "D <bytes read>\n".
func Sink(stdin io.Reader, stdout io.Writer) int {
	if _, err := io.WriteString(stdout, "R"); err != nil {
		return 1
	}
	flush(stdout)
	n, err := io.CopyBuffer(io.Discard, stdin, make([]byte, 64<<10))
	if err != nil {
		return 1
	}
	fmt.Fprintf(stdout, "D %d\n", n)
	return 0
}

// ParseSourceArgs reads `<agent> source N`'s arguments: one count of bytes,
// at most framing.MaxSourceBytes.
func ParseSourceArgs(args []string) (int64, error) {
	c, err := agentcmd.ParseArgs(append([]string{string(agentcmd.VerbSource)}, args...))
	return c.Bytes, err
}

// Source is `<agent> source N`: "R", then N bytes that do not compress (ssh
// may compress, which would measure the compressor instead of the link).
func Source(args []string, stdout, stderr io.Writer) int {
	n, err := ParseSourceArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, "strata-vision-relay "+err.Error())
		return 2
	}
	// One random MiB, repeated: far beyond zlib's 32 KiB window, so it does
	// not compress, and no random number is drawn per byte.
	block := make([]byte, 1<<20)
	rand.Read(block)
	w := bufio.NewWriterSize(stdout, 64<<10)
	w.WriteString("R")
	w.Flush()
	for n > 0 {
		b := block
		if int64(len(b)) > n {
			b = b[:n]
		}
		if _, err := w.Write(b); err != nil {
			return 1
		}
		n -= int64(len(b))
	}
	if err := w.Flush(); err != nil {
		return 1
	}
	return 0
}

func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() error }); ok {
		f.Flush()
	}
}

// unameLine is `uname -sm` here (the OS version on Windows); "" when it
// cannot be had.
func unameLine(ctx context.Context) string {
	if runtime.GOOS == "windows" {
		return windowsVersion()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "uname", "-sm").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
