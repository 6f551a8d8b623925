//go:build !windows

package asowner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/atomicfile"
)

// maxHops bounds the links followed in root's own folders (as the kernel's 40).
const maxHops = 40

// Open opens path for reading, a regular file of at most limit bytes
// (limit < 0: any size), without blocking (a FIFO is refused, never
// waited on). With an account (the install's owner, see For), each element
// of the path is opened in turn from /: a symbolic link is followed only
// in a folder root alone may change (root's own links, such as /var/run);
// in any other folder it is refused. Each folder must be one the account
// may enter and the file one it may read: the service never reads for an
// owner what the owner could not read.
func Open(path string, limit int64, a *account.Account) (*os.File, error) {
	if a == nil {
		return openPlain(path, limit)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dirfd, base, shown, err := walkDir(abs, a)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "open", Path: shown, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil, &RefusedError{Path: shown, Why: fmt.Sprintf("it is a symbolic link in a folder %s may change; the service does not follow it", a.Name)}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &RefusedError{Path: shown, Why: "it is not a regular file"}
	}
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: shown, Err: err}
	}
	f := os.NewFile(uintptr(fd), shown)
	if err := checkOpened(f, shown, limit, a); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openPlain is Open with this process's own rights: links followed as
// usual, but only a regular file, bounded, and never blocking.
func openPlain(path string, limit int64) (*os.File, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if err := checkRegular(path, fi, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if err := checkOpened(f, path, limit, nil); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkOpened checks what was opened (it may have been swapped since the
// name was looked at): regular, bounded, readable by a.
func checkOpened(f *os.File, shown string, limit int64, a *account.Account) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := checkRegular(shown, fi, limit); err != nil {
		return err
	}
	if a != nil {
		st := fi.Sys().(*syscall.Stat_t)
		if !allows(a, st.Uid, st.Gid, uint32(st.Mode), 4) {
			return &RefusedError{Path: shown, Why: fmt.Sprintf("%s may not read it (it belongs to uid %d, mode %o)", a.Name, st.Uid, st.Mode&0o7777)}
		}
	}
	return nil
}

// CouldRead reports whether a (nil: this process) could read path itself,
// and why not: Open's checks, for a file the service hands to another
// program (an upload to a second PC) rather than reading it here.
func CouldRead(path string, a *account.Account) error {
	f, err := Open(path, -1, a)
	if err != nil {
		return err
	}
	return f.Close()
}

// allows: the classic permission check of uid/gid/mode for a and the
// access bits want (4 read, 2 write, 1 search). ACLs are not read.
func allows(a *account.Account, uid, gid, mode uint32, want uint32) bool {
	switch {
	case uid == a.UID:
		return (mode>>6)&want == want
	case inGroup(a, gid):
		return (mode>>3)&want == want
	}
	return mode&want == want
}

func inGroup(a *account.Account, gid uint32) bool {
	if gid == a.GID {
		return true
	}
	for _, g := range a.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// rootsOwn: a folder only root may change (root's, not writable by its
// group or others): the links in it are root's own choice.
func rootsOwn(st *unix.Stat_t) bool {
	return st.Uid == 0 && st.Mode&0o022 == 0
}

// walkDir opens the folder holding abs element by element from / and
// returns it (an open descriptor), the last element's name and the path
// as it was reached (links in root's folders replaced by their targets).
func walkDir(abs string, a *account.Account) (int, string, string, error) {
	p := filepath.Clean(abs)
	for hops := 0; ; {
		dir, base := filepath.Split(p)
		if base == "" {
			return -1, "", "", &RefusedError{Path: p, Why: "it is a folder"}
		}
		fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, "", "", err
		}
		comps := strings.Split(strings.Trim(dir, "/"), "/")
		if strings.Trim(dir, "/") == "" {
			comps = nil
		}
		reached := "/"
		restart := ""
		for i, c := range comps {
			var dst unix.Stat_t
			if err := unix.Fstat(fd, &dst); err != nil {
				unix.Close(fd)
				return -1, "", "", err
			}
			if !allows(a, dst.Uid, dst.Gid, dst.Mode, 1) {
				unix.Close(fd)
				return -1, "", "", &RefusedError{Path: p, Why: fmt.Sprintf("%s may not enter the folder %s", a.Name, reached)}
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				unix.Close(fd)
				return -1, "", "", &os.PathError{Op: "open", Path: filepath.Join(reached, c), Err: err}
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				if !rootsOwn(&dst) {
					unix.Close(fd)
					return -1, "", "", &RefusedError{Path: p, Why: fmt.Sprintf("%s is a symbolic link in a folder %s (or an account other than root) may change; the service does not follow it", filepath.Join(reached, c), a.Name)}
				}
				buf := make([]byte, 4096)
				n, err := unix.Readlinkat(fd, c, buf)
				unix.Close(fd)
				if err != nil {
					return -1, "", "", err
				}
				if hops++; hops > maxHops {
					return -1, "", "", &RefusedError{Path: p, Why: "too many symbolic links"}
				}
				target := string(buf[:n])
				if !filepath.IsAbs(target) {
					target = filepath.Join(reached, target)
				}
				restart = filepath.Join(append([]string{target}, append(comps[i+1:], base)...)...)
				break
			}
			nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				return -1, "", "", &os.PathError{Op: "open", Path: filepath.Join(reached, c), Err: err}
			}
			fd = nfd
			reached = filepath.Join(reached, c)
		}
		if restart != "" {
			p = filepath.Clean(restart)
			continue
		}
		var dst unix.Stat_t
		if err := unix.Fstat(fd, &dst); err != nil {
			unix.Close(fd)
			return -1, "", "", err
		}
		if !allows(a, dst.Uid, dst.Gid, dst.Mode, 1) {
			unix.Close(fd)
			return -1, "", "", &RefusedError{Path: p, Why: fmt.Sprintf("%s may not enter the folder %s", a.Name, reached)}
		}
		return fd, base, p, nil
	}
}

// WriteFile replaces path with data, atomically (a temporary file beside
// it, flushed, then renamed over it). With an account (see For) the folder
// is reached as Open reaches it (no link of the owner's followed), the
// temporary file is made there without following a link, and the result
// belongs to the account: an existing file keeps its owner and mode (when
// it is a regular file the account could write), a new one gets the
// account's uid and gid and perm. check (when not nil) runs right before
// the rename; its error leaves the target as it is. Without an account it
// is atomicfile.WriteChecked.
func WriteFile(path string, data []byte, perm os.FileMode, a *account.Account, check func() error) (err error) {
	if a == nil {
		return atomicfile.WriteChecked(path, data, perm, check)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dirfd, base, shown, err := walkDir(abs, a)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	var dst unix.Stat_t
	if err := unix.Fstat(dirfd, &dst); err != nil {
		return err
	}
	if !allows(a, dst.Uid, dst.Gid, dst.Mode, 3) {
		return &RefusedError{Path: shown, Why: fmt.Sprintf("%s may not change the folder %s", a.Name, filepath.Dir(shown))}
	}
	uid, gid := int(a.UID), int(a.GID)
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &RefusedError{Path: shown, Why: "it is not a regular file (a link, a folder or a pipe); the service does not replace it"}
	case err == nil:
		if !allows(a, st.Uid, st.Gid, st.Mode, 2) {
			return &RefusedError{Path: shown, Why: fmt.Sprintf("%s may not write it (uid %d, mode %o)", a.Name, st.Uid, st.Mode&0o7777)}
		}
		uid, gid, perm = int(st.Uid), int(st.Gid), os.FileMode(st.Mode&0o777)
	case err != unix.ENOENT:
		return &os.PathError{Op: "stat", Path: shown, Err: err}
	}
	var tmp string
	var fd int
	for i := 0; ; i++ {
		tmp = fmt.Sprintf(".%s.tmp-%d-%d", base, os.Getpid(), i)
		fd, err = unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			break
		}
		if err != unix.EEXIST || i > 100 {
			return &os.PathError{Op: "create", Path: filepath.Join(filepath.Dir(shown), tmp), Err: err}
		}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(shown), tmp))
	done := false
	defer func() {
		if !done {
			f.Close()
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return fmt.Errorf("giving %s to %s: %w", f.Name(), a.Name, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return fmt.Errorf("setting the mode of %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("flushing %s to disk: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	done = true
	if check != nil {
		if err := check(); err != nil {
			unix.Unlinkat(dirfd, tmp, 0)
			return err
		}
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("replacing %s: %w", shown, err)
	}
	unix.Fsync(dirfd)
	return nil
}

// safePath is the minimal PATH a program run as the owner gets.
const safePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Command is name with args in dir, to run as a (nil: as this process,
// with this process's environment plus env). As a: its uid, gid and groups
// (SysProcAttr.Credential), and a clean environment: PATH, HOME (from the
// account database), USER, LOGNAME, LANG, then env. Nothing of the
// service's own environment reaches it. git run this way needs no
// safe.directory: it runs as the checkout's owner.
func Command(ctx context.Context, a *account.Account, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if a == nil {
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: a.Credential(), Setsid: true}
	cmd.Env = CleanEnv(a, env)
	return cmd
}

// CleanEnv is the whole environment of a program run as a: nothing of the
// service's, but for LANG.
func CleanEnv(a *account.Account, env []string) []string {
	home := a.Home
	if home == "" {
		home = "/"
	}
	out := []string{"PATH=" + safePath, "HOME=" + home, "USER=" + a.Name, "LOGNAME=" + a.Name}
	if l := os.Getenv("LANG"); l != "" {
		out = append(out, "LANG="+l)
	}
	return append(out, env...)
}

// Release is nothing on Unix (Windows closes the token Command used).
func Release(*exec.Cmd) {}
