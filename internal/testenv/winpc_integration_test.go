//go:build linux

package testenv

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestMain(m *testing.M) { Main(m) }

func runOn(t *testing.T, c *ssh.Client, cmd string, stdin []byte) (string, string, error) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	if stdin != nil {
		s.Stdin = bytes.NewReader(stdin)
	}
	err = s.Run(cmd)
	return out.String(), errb.String(), err
}

// The Windows second PC answers as Windows' OpenSSH with cmd.exe does, and
// its sftp shows the prefix's C: drive with /C:/ paths.
func TestWindowsPC(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up wine")
	}
	pc := StartWindowsPC(t, WindowsPCOptions{})
	c := pc.Dial(t)

	out, _, err := runOn(t, c, "ver", nil)
	if err != nil || !strings.Contains(out, "Microsoft Windows") || !strings.Contains(out, " 10.0.") {
		t.Fatalf("ver (Windows 10, as Windows' OpenSSH needs): %q %v", out, err)
	}
	out, _, err = runOn(t, c, "echo %PROCESSOR_ARCHITEW6432% %PROCESSOR_ARCHITECTURE%", nil)
	if err != nil || !strings.Contains(out, "AMD64") {
		t.Fatalf("arch: %q %v", out, err)
	}
	// The command line reaches cmd.exe raw: quotes, &&, redirection, and
	// the exit status comes back.
	out, _, err = runOn(t, c, `mkdir "a b" && echo hi> "a b\x.txt" && type "a b\x.txt" && cd`, nil)
	if err != nil || !strings.Contains(out, "hi") || !strings.Contains(strings.ToLower(out), strings.ToLower(pc.Profile)) {
		t.Fatalf("cmd line: %q %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(pc.ProfileDir, "a b", "x.txt")); err != nil || !strings.HasPrefix(string(b), "hi") {
		t.Fatalf("the file cmd.exe wrote: %q %v", b, err)
	}
	if _, _, err := runOn(t, c, "exit /b 3", nil); err == nil || err.(*ssh.ExitError).ExitStatus() != 3 {
		t.Fatalf("exit status: %v", err)
	}
	// stdin passes through wine to a Windows program.
	out, _, err = runOn(t, c, "cmd /v:on /c \"set /p v=& echo got !v!\"", []byte("axb\nyyy\n"))
	if err != nil || !strings.Contains(out, "got axb") {
		t.Fatalf("stdin: %q %v", out, err)
	}

	s := pc.SFTP(t, c)
	wd, err := s.Getwd()
	if err != nil || !strings.EqualFold(wd, "/C:/users/"+pc.User) {
		t.Fatalf("sftp working folder %q %v", wd, err)
	}
	f, err := s.Open("/C:/Users/" + pc.User + "/A B/X.TXT") // letter case as Windows ignores it
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if !strings.HasPrefix(string(b), "hi") {
		t.Fatalf("sftp read %q", b)
	}
	w, err := s.Create("up.bin")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("payload"))
	w.Close()
	if err := s.PosixRename("up.bin", "a b/up2.bin"); err != nil {
		t.Fatal(err)
	}
	out, _, err = runOn(t, c, `type "a b\up2.bin"`, nil)
	if err != nil || out != "payload" {
		t.Fatalf("sftp-written file as cmd.exe sees it: %q %v", out, err)
	}
	if _, err := s.Stat("/D:/x"); err == nil {
		t.Error("a drive that does not exist")
	}
	os.RemoveAll(filepath.Join(pc.ProfileDir, "a b"))
}
