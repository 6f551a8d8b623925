//go:build linux

package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/framing"
)

// M1 and the Low item on stat: through the companion's key an upload could
// replace the strata-vision encoder (which the next session ran) or ask for
// mode 0777, and stat answered size and sha256 of any file the account could
// read. Now: the agent's own program is never replaced, a program only with
// its sha256 announced (prepare's checksummed install), modes are capped at
// 0755, and stat answers only inside the agent's folder.
func TestUploadsAndStatStayInTheAgentsLane(t *testing.T) {
	dir := t.TempDir()
	good := []byte("#!/bin/sh\necho the real encoder\n")
	sum := sha256.Sum256(good)
	goodSum := hex.EncodeToString(sum[:])
	s := start(t, Config{Dir: dir, ScratchParent: t.TempDir(), InstallSHA256: []string{goodSum}})
	put := func(name string, data []byte, mode uint32) (framing.Type, string) {
		t.Helper()
		sum := sha256.Sum256(data)
		s.w.WriteJSON(framing.PutBegin, framing.PutHeader{Name: name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Mode: mode})
		s.w.Write(framing.PutData, data)
		s.w.Write(framing.PutEnd)
		typ, p := s.next()
		return typ, string(p)
	}
	evil := []byte("#!/bin/sh\nid > /tmp/owned\n")
	for _, c := range []struct {
		name string
		mode uint32
		want string
	}{
		{"strata-vision", 0o755, "checksummed install"},
		{"strata-vision.exe", 0o644, "checksummed install"},
		{"libggml-cuda.so", 0o644, "checksummed install"},
		{"ggml.dll", 0o644, "checksummed install"},
		{"innocent.gguf", 0o777, "checksummed install"}, // an executable mode is a program too
		{"strata-vision-relay", 0o755, "own program"},
		{filepath.Base(os.Args[0]), 0o755, "own program"},
	} {
		typ, p := put(c.name, evil, c.mode)
		if typ != framing.Error || !strings.Contains(p, c.want) {
			t.Errorf("upload of %s (mode %o): %q %s; want refused (%s)", c.name, c.mode, typ, p, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, c.name)); err == nil {
			t.Errorf("%s was written", c.name)
		}
		// PutData after a refused begin is dropped; the session goes on.
		for {
			if _, err := os.Stat(filepath.Join(dir, c.name+".part")); err != nil {
				break
			}
			t.Fatalf("%s.part was left", c.name)
		}
	}
	// The announced build is installed, 0755 at most.
	if typ, p := put("strata-vision", good, 0o4777); typ != framing.PutReply {
		t.Fatalf("the checksummed encoder: %q %s", typ, p)
	}
	if st, err := os.Stat(filepath.Join(dir, "strata-vision")); err != nil || st.Mode().Perm() != 0o755 || st.Mode()&os.ModeSetuid != 0 {
		t.Errorf("installed encoder: %v %v; want 0755", st.Mode(), err)
	}
	if typ, p := put("mmproj.gguf", []byte("data"), 0o666); typ != framing.PutReply {
		t.Fatalf("a data file: %q %s", typ, p)
	}
	if st, _ := os.Stat(filepath.Join(dir, "mmproj.gguf")); st.Mode().Perm() != 0o644 {
		t.Errorf("data file mode %v; want 0644 (no group or world write)", st.Mode().Perm())
	}
	// stat: its own files by name or by absolute path inside; nothing else.
	stat := func(name string) (framing.Type, framing.FileInfo, string) {
		s.w.WriteJSON(framing.Stat, map[string]string{"name": name})
		typ, p := s.next()
		var fi framing.FileInfo
		json.Unmarshal(p, &fi)
		return typ, fi, string(p)
	}
	if typ, fi, _ := stat(filepath.Join(dir, "mmproj.gguf")); typ != framing.StatReply || !fi.Exists {
		t.Errorf("stat inside the folder: %q %+v", typ, fi)
	}
	for _, name := range []string{"/etc/passwd", filepath.Join(dir, "..", "x"), "/proc/self/environ"} {
		if typ, fi, p := stat(name); typ != framing.Error || fi.SHA256 != "" {
			t.Errorf("stat of %s: %q %s; want refused", name, typ, p)
		}
	}
}
