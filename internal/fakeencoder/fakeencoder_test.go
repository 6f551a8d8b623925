package fakeencoder

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	if code == 0 || strings.HasPrefix(out.String(), "READY") || !strings.Contains(out.String(), "vision projector") {
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
