package fserr

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Permission: administrator advice only to someone who is not one.
func TestDeniedAdvisesAnAdministratorOnlyWhenNotOne(t *testing.T) {
	err := &os.PathError{Op: "open", Path: "/etc/x.json", Err: syscall.EACCES}
	for _, admin := range []bool{false, true} {
		t.Run(fmt.Sprint("elevated=", admin), func(t *testing.T) {
			old := Elevated
			Elevated = func() bool { return admin }
			t.Cleanup(func() { Elevated = old })
			got := Explain(fmt.Errorf("writing: %w", err), "/etc/x.json").Error()
			if strings.Contains(got, "run the command again as an administrator") == admin {
				t.Fatalf("elevated=%v: %q", admin, got)
			}
			if !strings.Contains(got, "/etc/x.json") {
				t.Fatalf("no path in %q", got)
			}
		})
	}
	// The real thing, when we are root: a read-only bind or chattr is not
	// at hand, but EPERM from the kernel is classified the same.
	if CauseOf(&os.PathError{Err: syscall.EPERM}) != Denied {
		t.Fatal("EPERM is not a permission error")
	}
}

func TestReadOnlyFileSystemAndOthers(t *testing.T) {
	got := Explain(&os.PathError{Op: "open", Path: "/mnt/ro/a.json", Err: syscall.EROFS}, "/mnt/ro/a.json")
	if !strings.Contains(got.Error(), "/mnt/ro is on a read-only file system") {
		t.Fatalf("got %q", got)
	}
	plain := errors.New("something else")
	if Explain(plain, "/x") != plain || Explain(nil, "/x") != nil {
		t.Fatal("an unrelated error was changed")
	}
}
