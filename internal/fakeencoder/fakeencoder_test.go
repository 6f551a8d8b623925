package fakeencoder

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/testenv"
)

func files(t *testing.T) (dir, mm, model string) {
	t.Helper()
	dir = t.TempDir()
	mm, model = filepath.Join(dir, "mmproj.gguf"), filepath.Join(dir, "vocab.gguf")
	if err := WriteMmproj(mm, 64); err != nil {
		t.Fatal(err)
	}
	if err := WriteModel(model, 10); err != nil {
		t.Fatal(err)
	}
	return dir, mm, model
}

// run is the stand-in running in this process.
type run struct {
	in   *io.PipeWriter
	errb *testenv.Buffer
	done chan int
}

// startRun runs the stand-in in this process until its input is closed; it
// returns the first stdout line (what stderr held by then is in errb).
func startRun(t *testing.T, args ...string) (*run, string) {
	t.Helper()
	r := &run{errb: &testenv.Buffer{}, done: make(chan int, 1)}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r.in = inW
	go func() { r.done <- Run(args, inR, outW, r.errb); outW.Close() }()
	first := make(chan string, 1)
	go func() {
		b := make([]byte, 0, 64)
		one := make([]byte, 1)
		for {
			if _, err := outR.Read(one); err != nil || one[0] == '\n' {
				break
			}
			b = append(b, one[0])
		}
		first <- string(b)
		io.Copy(io.Discard, outR)
	}()
	t.Cleanup(func() { inW.Close() })
	select {
	case l := <-first:
		return r, l
	case <-time.After(20 * time.Second):
		t.Fatal("no first line within 20 s")
		return nil, ""
	}
}

func (r *run) quit(t *testing.T) int {
	t.Helper()
	io.WriteString(r.in, "QUIT\n")
	select {
	case c := <-r.done:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no exit within 20 s of QUIT")
		return -1
	}
}

// TestArgumentsAsTheRealEncoder: the arguments strata_vision.cpp knows are
// taken, any other stops it with exit 2 before READY (a newer server's
// --min-tokens included), a flag without its value too.
func TestArgumentsAsTheRealEncoder(t *testing.T) {
	_, mm, model := files(t)
	t.Setenv("PATH", t.TempDir()) // no nvidia-smi
	for _, bad := range [][]string{{"--min-tokens", "64"}, {"--a-future-flag", "3"}, {"--threads"}} {
		var out, errb bytes.Buffer
		code := Run(append([]string{"--mmproj", mm, "--model", model}, bad...), strings.NewReader(""), &out, &errb)
		want := "unknown argument " + bad[0]
		if len(bad) == 1 {
			want = bad[0] + " needs a value"
		}
		if code != 2 || out.Len() != 0 || strings.TrimSpace(errb.String()) != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q (want exit 2, %q)", bad, code, out.String(), errb.String(), want)
		}
	}
	var errb bytes.Buffer
	if code := Run([]string{"--model", model}, strings.NewReader(""), io.Discard, &errb); code != 2 || !strings.HasPrefix(errb.String(), "usage: strata-vision") {
		t.Errorf("no --mmproj: exit %d, %q", code, errb.String())
	}
	r, first := startRun(t, "--mmproj", mm, "--model", model, "--flash-attn", "on", "--threads", "3", "--max-tokens", "4")
	if first != "READY 64" {
		t.Fatalf("with --flash-attn on: %q (%s)", first, r.errb.String())
	}
	if got := r.errb.String(); got != "strata-vision: on the CPU, 3 threads, no warm-up\n" {
		t.Errorf("CPU start line %q", got)
	}
	r.quit(t)
}

// TestPictureTimeFollowsTheDevice: on the CPU a picture's time grows with its
// image tokens and falls with the threads; a GPU is several times faster.
func TestPictureTimeFollowsTheDevice(t *testing.T) {
	cpu8, cpu4, gpu := device{threads: 8}, device{threads: 4}, device{gpu: true}
	if !(cpu8.pictureTime(1024) > cpu8.pictureTime(300) && cpu4.pictureTime(300) > cpu8.pictureTime(300)) {
		t.Errorf("CPU times: %s %s %s", cpu8.pictureTime(1024), cpu8.pictureTime(300), cpu4.pictureTime(300))
	}
	if r := float64(cpu8.pictureTime(1024)) / float64(gpu.pictureTime(1024)); r < 5 {
		t.Errorf("the GPU is only %.1fx faster than 8 CPU threads at 1024 tokens", r)
	}
}

func TestLineProtocol(t *testing.T) {
	dir := t.TempDir()
	mm, model := filepath.Join(dir, "mmproj.gguf"), filepath.Join(dir, "vocab.gguf")
	if err := WriteMmproj(mm, 64); err != nil {
		t.Fatal(err)
	}
	if err := WriteModel(model, 10); err != nil {
		t.Fatal(err)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), "pixels"...)
	os.WriteFile(filepath.Join(dir, "a.img"), png, 0o644)
	os.WriteFile(filepath.Join(dir, "b.img"), []byte("hello"), 0o644)
	in := strings.Join([]string{
		"ENC " + dir + "/a.img " + dir + "/a.sve",
		"ENC " + dir + "/b.img " + dir + "/b.sve",
		"ENC " + dir + "/missing.img " + dir + "/c.sve",
		"QUIT",
		"ENC " + dir + "/a.img " + dir + "/d.sve",
	}, "\n") + "\n"
	var out, errb bytes.Buffer
	if code := Run([]string{"--mmproj", mm, "--model", model, "--max-tokens", "12"}, strings.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || lines[0] != "READY 64" || !strings.HasPrefix(lines[1], "OK 12 3 4 ") ||
		!strings.HasPrefix(lines[2], "ERR ") || !strings.HasPrefix(lines[3], "ERR cannot read") {
		t.Fatalf("replies:\n%s", out.String())
	}
	sve, err := os.ReadFile(filepath.Join(dir, "a.sve"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sve) != 20+12*64*4 || binary.LittleEndian.Uint32(sve) != SVEMagic || binary.LittleEndian.Uint32(sve[16:]) != 64 {
		t.Fatalf("a.sve: %d bytes, header % x", len(sve), sve[:20])
	}
	if !bytes.Equal(sve, SVE(png, 12, 64)) || bytes.Equal(sve, SVE([]byte("other"), 12, 64)) {
		t.Fatal("the .sve is not a function of the picture")
	}
	if _, err := os.Stat(filepath.Join(dir, "d.sve")); err == nil {
		t.Fatal("a request after QUIT was served")
	}
}

func TestFailedStartPrintsAReasonNotReady(t *testing.T) {
	var out bytes.Buffer
	code := Run([]string{"--mmproj", "/nonexistent/mm.gguf", "--model", "/nonexistent/m.gguf"}, strings.NewReader(""), &out, io.Discard)
	// The real encoder opens the text model first.
	if code != 1 || out.String() != "ERR cannot open the text model /nonexistent/m.gguf\n" {
		t.Fatalf("exit %d, first line %q", code, out.String())
	}
	_, _, model := files(t)
	out.Reset()
	code = Run([]string{"--mmproj", "/nonexistent/mm.gguf", "--model", model}, strings.NewReader(""), &out, io.Discard)
	if code != 1 || out.String() != "ERR cannot load the vision encoder /nonexistent/mm.gguf\n" {
		t.Fatalf("exit %d, first line %q", code, out.String())
	}
}

func TestGrid(t *testing.T) {
	for _, n := range []int{1, 7, 12, 300, 1024} {
		nx, ny := Grid(n)
		if nx*ny != n {
			t.Errorf("Grid(%d) = %d x %d", n, nx, ny)
		}
	}
}
