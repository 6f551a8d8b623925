//go:build linux

package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"os/user"
	"strings"
	"testing"
	"time"
)

// User is a throwaway local account for ssh tests that need a password
// login or a real ~/.ssh of their own (root's is never touched).
type User struct {
	Name     string
	Password string
	Home     string
}

// NewUser makes the account (with a home folder and /bin/sh) and removes it,
// home included, when t ends. It needs root and useradd/chpasswd/userdel.
func NewUser(t testing.TB) *User {
	t.Helper()
	Root(t)
	bins := LookPath(t, "useradd", "chpasswd", "userdel")
	b := make([]byte, 4)
	rand.Read(b)
	u := &User{Name: "strt" + hex.EncodeToString(b), Password: "pw-" + hex.EncodeToString(b) + "-x"}
	// Several test binaries may edit /etc/passwd at once: useradd refuses
	// while another holds its lock, so retry a little.
	run := func(args ...string) error {
		var err error
		var out []byte
		for i := 0; i < 20; i++ {
			cmd := exec.Command(args[0], args[1:]...)
			if args[0] == bins[1] {
				cmd.Stdin = strings.NewReader(u.Name + ":" + u.Password + "\n")
			}
			if out, err = cmd.CombinedOutput(); err == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	if err := run(bins[0], "-m", "-s", "/bin/sh", u.Name); err != nil {
		Skip(t, "cannot add a test user: "+err.Error())
	}
	t.Cleanup(func() { run(bins[2], "-r", "-f", u.Name) })
	if err := run(bins[1]); err != nil {
		t.Fatal(err)
	}
	pw, err := user.Lookup(u.Name)
	if err != nil {
		t.Fatal(err)
	}
	u.Home = pw.HomeDir
	return u
}
