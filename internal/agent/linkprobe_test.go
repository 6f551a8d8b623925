package agent

import (
	"bytes"
	"compress/flate"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/framing"
)

func TestProbeRefusesFilesOutsideItsFolder(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(filepath.Dir(dir), "elsewhere")
	for _, args := range [][]string{
		{"--file", "../x"}, {"--file", "sub/../../x"}, {"--file", `..\x`}, {"--file", outside},
		{"--file", "/etc/passwd"}, {"--file"}, {"--file", ""}, {"--bogus", "x"}, {"x"},
	} {
		if a, err := ParseProbeArgs(args, dir); err == nil {
			t.Errorf("probe %q was accepted: %+v", args, a)
		}
	}
	a, err := ParseProbeArgs([]string{"--file", "mm.gguf", "--file=sub/v.gguf", "--file", filepath.Join(dir, "x.gguf"), "--encoder", "strata-vision"}, dir)
	if err != nil || len(a.Files) != 3 || a.Encoder != "strata-vision" {
		t.Errorf("names in its folder: %+v %v", a, err)
	}
}

func TestProbeThisPCReportsItsFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"strata-vision", "mm.gguf", "v.GGUF", "notes.txt"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
	}
	os.Mkdir(filepath.Join(dir, "folder.gguf"), 0o755)
	a, err := ParseProbeArgs([]string{"--encoder", "strata-vision", "--file", "mm.gguf", "--file", "missing.gguf", "--file", "folder.gguf"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	info := ProbeThisPC(context.Background(), a, dir, filepath.Join(dir, "no-nvidia-smi"))
	if info.OS != runtime.GOOS || info.Arch != runtime.GOARCH || info.Dir != dir {
		t.Errorf("system %+v", info)
	}
	if runtime.GOOS == "linux" && !strings.HasPrefix(info.Uname, "Linux ") {
		t.Errorf("uname %q", info.Uname)
	}
	if info.NvidiaSMIFound || len(info.Nvidia) != 0 {
		t.Errorf("no nvidia-smi, but %+v", info.Nvidia)
	}
	if info.Encoder == nil || !info.Encoder.Present {
		t.Errorf("encoder %+v", info.Encoder)
	}
	want := map[string]bool{"mm.gguf": true, "missing.gguf": false, "folder.gguf": false}
	if len(info.Files) != 3 {
		t.Fatalf("files %+v", info.Files)
	}
	for _, f := range info.Files {
		if p, ok := want[f.Name]; !ok || p != f.Present {
			t.Errorf("file %+v, want present %v", f, p)
		}
	}
	if strings.Join(info.GGUF, ",") != "mm.gguf,v.GGUF" {
		t.Errorf("gguf %q", info.GGUF)
	}
}

func TestSinkCountsAndSourceDoesNotCompress(t *testing.T) {
	var out bytes.Buffer
	if code := Sink(bytes.NewReader(make([]byte, 123457)), &out); code != 0 || out.String() != "R"+"D 123457\n" {
		t.Errorf("sink: %d %q", code, out.String())
	}
	out.Reset()
	const n = 3<<20 + 5
	var stderr bytes.Buffer
	if code := Source([]string{"3145733"}, &out, &stderr); code != 0 || out.Len() != n+1 || out.Bytes()[0] != 'R' {
		t.Fatalf("source: %d, %d bytes, %s", code, out.Len(), stderr.String())
	}
	var z bytes.Buffer
	zw, _ := flate.NewWriter(&z, flate.BestCompression)
	zw.Write(out.Bytes()[1:])
	zw.Close()
	if z.Len() < n*95/100 {
		t.Errorf("the source's %d bytes compress to %d: ssh's compression would be measured", n, z.Len())
	}
	for _, bad := range [][]string{{"1073741825"}, {"99999999999999999999"}, {"-1"}, {"0x10"}, {"1e6"}, {"10 20"}, {}, {"1", "2"}} {
		out.Reset()
		stderr.Reset()
		if code := Source(bad, &out, &stderr); code == 0 || out.Len() != 0 || stderr.Len() == 0 {
			t.Errorf("source %q: exit %d, %d bytes written, %q", bad, code, out.Len(), stderr.String())
		}
	}
	if n, err := ParseSourceArgs([]string{"1073741824"}); err != nil || n != framing.MaxSourceBytes {
		t.Errorf("1 GiB: %d %v", n, err)
	}
}
