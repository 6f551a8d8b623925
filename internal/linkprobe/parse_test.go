package linkprobe

import (
	"github.com/strata-companion/companion/internal/capbuf"

	"bytes"
	"testing"
	"time"
)

func TestParseUnameAndWindowsArch(t *testing.T) {
	for _, c := range []struct{ in, os, arch string }{
		{"Linux x86_64", "linux", "amd64"},
		{"Linux aarch64", "linux", "arm64"},
		{"Darwin arm64", "darwin", "arm64"},
		{"MINGW64_NT-10.0-19045 x86_64", "windows", "amd64"},
		{"MSYS_NT-10.0 x86_64", "windows", "amd64"},
	} {
		os, arch, ok := parseUname(c.in)
		if !ok || os != c.os || arch != c.arch {
			t.Errorf("parseUname(%q) = %q %q %v", c.in, os, arch, ok)
		}
	}
	for _, bad := range []string{"", "'uname' is not recognized as an internal or external command,", "Linux"} {
		if _, _, ok := parseUname(bad); ok {
			t.Errorf("parseUname(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{
		"%PROCESSOR_ARCHITEW6432% AMD64\r\n": "amd64",
		"AMD64 x86\r\n":                      "amd64", // 32-bit cmd on 64-bit Windows
		"%PROCESSOR_ARCHITEW6432% ARM64":     "arm64",
	} {
		if got := windowsArch(in); got != want {
			t.Errorf("windowsArch(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMedian(t *testing.T) {
	ms := time.Millisecond
	if m := median([]time.Duration{5 * ms, 1 * ms, 90 * ms}); m != 5*ms {
		t.Errorf("odd: %v", m)
	}
	if m := median([]time.Duration{4 * ms, 2 * ms, 100 * ms, 6 * ms}); m != 5*ms {
		t.Errorf("even: %v", m)
	}
	if median(nil) != 0 {
		t.Error("empty")
	}
}

// A second PC that streams without end fills at most maxOutput of memory
// per command; what came first is kept, the writer is never refused (the
// ssh session would otherwise fail instead of timing out with a finding).
func TestCommandOutputIsBounded(t *testing.T) {
	b := capbuf.Buffer{Max: maxOutput} // as the probe keeps each command's output
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	b.Write([]byte("first line\n"))
	for i := 0; i < 64; i++ { // 4 MiB
		if n, err := b.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("write %d: %d %v", i, n, err)
		}
	}
	got := b.Bytes()
	if len(got) != maxOutput || !bytes.HasPrefix(got, []byte("first line\n")) {
		t.Fatalf("kept %d bytes (want %d), starting %q", len(got), maxOutput, got[:20])
	}
}
