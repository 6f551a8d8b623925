// Command winpc-shell is the Linux half of testenv's Windows second PC, run
// by sshd as ForceCommand. A command runs as Windows' OpenSSH runs it with
// cmd.exe as the default shell: `cmd.exe /c <command>`, through wine's
// cmd.exe (via winpc-cmd.exe, which keeps the command line raw), in the
// user's profile folder. The sftp subsystem offers the wine prefix's C: drive
// the way Windows' sftp-server does: paths like /C:/Users/sam/file.
//
// Usage (sshd_config): ForceCommand winpc-shell CONFIG
// and Subsystem sftp winpc-shell CONFIG --sftp.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pkg/sftp"
)

// Config is written by testenv.StartWindowsPC.
type Config struct {
	Env        []string // wine's environment (WINEPREFIX, HOME, ...)
	Drive      string   // Linux path of drive_c
	ProfileDir string   // Linux path of %USERPROFILE%
	Profile    string   // %USERPROFILE% in Windows words (C:\users\root)
	Launcher   string   // winpc-cmd.exe, Windows path
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: winpc-shell CONFIG [--sftp]")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	var cfg Config
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "winpc-shell: reading the config:", err)
		os.Exit(2)
	}
	orig := os.Getenv("SSH_ORIGINAL_COMMAND")
	self := strings.Join(os.Args[:2], " ") + " --sftp"
	if (len(os.Args) > 2 && os.Args[2] == "--sftp") || orig == self {
		os.Exit(serveSFTP(cfg))
	}
	if strings.TrimSpace(orig) == "" {
		fmt.Fprintln(os.Stderr, "this test PC runs commands only (no interactive shell)")
		os.Exit(1)
	}
	wine, err := exec.LookPath("wine")
	if err != nil {
		fmt.Fprintln(os.Stderr, "winpc-shell: wine is not installed")
		os.Exit(1)
	}
	if err := os.Chdir(cfg.ProfileDir); err != nil {
		fmt.Fprintln(os.Stderr, "winpc-shell:", err)
		os.Exit(1)
	}
	env := append(append([]string{}, cfg.Env...), "STRATA_WINPC_COMMAND="+orig)
	err = syscall.Exec(wine, []string{"wine", cfg.Launcher}, env)
	fmt.Fprintln(os.Stderr, "winpc-shell: exec wine:", err)
	os.Exit(1)
}

type stdio struct {
	io.Reader
	io.WriteCloser
}

func serveSFTP(cfg Config) int {
	h := &winFS{drive: cfg.Drive}
	start := "/" + strings.ReplaceAll(cfg.Profile, `\`, "/")
	srv := sftp.NewRequestServer(stdio{os.Stdin, os.Stdout}, sftp.Handlers{FileGet: h, FilePut: h, FileCmd: h, FileList: h},
		sftp.WithStartDirectory(start))
	if err := srv.Serve(); err != nil && err != io.EOF {
		fmt.Fprintln(os.Stderr, "winpc-shell sftp:", err)
		return 1
	}
	return 0
}

// winFS maps /C:/a/b (any letter case, as on Windows) to drive_c/a/b.
type winFS struct{ drive string }

func (f *winFS) local(p string) (string, error) {
	p = path.Clean("/" + strings.ReplaceAll(p, `\`, "/"))
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) == 0 || !strings.EqualFold(parts[0], "C:") {
		return "", fmt.Errorf("%s: no such drive (this PC has C: only): %w", p, os.ErrNotExist)
	}
	cur := f.drive
	for _, name := range parts[1:] {
		if name == "" {
			continue
		}
		next := filepath.Join(cur, name)
		if _, err := os.Lstat(next); err != nil {
			if ents, err := os.ReadDir(cur); err == nil {
				for _, e := range ents {
					if strings.EqualFold(e.Name(), name) {
						next = filepath.Join(cur, e.Name())
						break
					}
				}
			}
		}
		cur = next
	}
	return cur, nil
}

func (f *winFS) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	p, err := f.local(r.Filepath)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func (f *winFS) open(r *sftp.Request) (*os.File, error) {
	p, err := f.local(r.Filepath)
	if err != nil {
		return nil, err
	}
	fl := r.Pflags()
	flags := 0
	switch {
	case fl.Read && fl.Write:
		flags = os.O_RDWR
	case fl.Write:
		flags = os.O_WRONLY
	default:
		flags = os.O_RDONLY
	}
	if fl.Append {
		flags |= os.O_APPEND
	}
	if fl.Creat {
		flags |= os.O_CREATE
	}
	if fl.Trunc {
		flags |= os.O_TRUNC
	}
	if fl.Excl {
		flags |= os.O_EXCL
	}
	return os.OpenFile(p, flags, 0o644)
}

func (f *winFS) Filewrite(r *sftp.Request) (io.WriterAt, error) { return f.open(r) }

func (f *winFS) OpenFile(r *sftp.Request) (sftp.WriterAtReaderAt, error) { return f.open(r) }

func (f *winFS) Filecmd(r *sftp.Request) error {
	p, err := f.local(r.Filepath)
	if err != nil {
		return err
	}
	switch r.Method {
	case "Setstat":
		flags, attrs := r.AttrFlags(), r.Attributes()
		if flags.Size {
			if err := os.Truncate(p, int64(attrs.Size)); err != nil {
				return err
			}
		}
		// Windows' sftp-server maps modes onto ACLs loosely; permissions
		// are accepted and ignored here as there.
		return nil
	case "Rename":
		t, err := f.local(r.Target)
		if err != nil {
			return err
		}
		// Windows' rename (MoveFileEx without REPLACE_EXISTING) fails on
		// an existing target; posix-rename@openssh.com replaces it.
		if _, err := os.Lstat(t); err == nil {
			return os.ErrExist
		}
		return os.Rename(p, t)
	case "Rmdir":
		return syscall.Rmdir(p)
	case "Remove":
		return syscall.Unlink(p)
	case "Mkdir":
		return os.Mkdir(p, 0o755)
	}
	return sftp.ErrSSHFxOpUnsupported
}

// PosixRename replaces an existing target (posix-rename@openssh.com, which
// Windows' sftp-server also offers).
func (f *winFS) PosixRename(r *sftp.Request) error {
	p, err := f.local(r.Filepath)
	if err != nil {
		return err
	}
	t, err := f.local(r.Target)
	if err != nil {
		return err
	}
	return os.Rename(p, t)
}

type lister []os.FileInfo

func (l lister) ListAt(out []os.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(out, l[off:])
	if n < len(out) {
		return n, io.EOF
	}
	return n, nil
}

func (f *winFS) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	p, err := f.local(r.Filepath)
	if err != nil {
		return nil, err
	}
	switch r.Method {
	case "List":
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		var out lister
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				out = append(out, fi)
			}
		}
		return out, nil
	case "Stat", "Lstat":
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		return lister{fi}, nil
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}
