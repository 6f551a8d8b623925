//go:build !windows

package account

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Privileged reports whether this process runs as root.
func Privileged() bool { return os.Geteuid() == 0 }

// Current is the account this process runs as.
func Current() (*Account, error) { return byUID(uint32(os.Geteuid())) }

// OwnerOf is the account that owns path (for a Strata install: the
// install's owner). An owner with no account entry keeps its uid as name.
func OwnerOf(path string) (*Account, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return byUID(st.Sys().(*syscall.Stat_t).Uid)
}

func byUID(uid uint32) (*Account, error) {
	a := &Account{UID: uid, Name: strconv.Itoa(int(uid)), Privileged: uid == 0}
	u, err := user.LookupId(strconv.Itoa(int(uid)))
	if err != nil {
		// No passwd entry: the uid alone, its own group.
		a.GID = uid
		return a, nil
	}
	a.Name, a.Home = u.Username, u.HomeDir
	gid, _ := strconv.Atoi(u.Gid)
	a.GID = uint32(gid)
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.Atoi(g); err == nil {
				a.Groups = append(a.Groups, uint32(n))
			}
		}
	}
	return a, nil
}

// Credential is what exec needs to run a process as a.
func (a *Account) Credential() *syscall.Credential {
	return &syscall.Credential{Uid: a.UID, Gid: a.GID, Groups: a.Groups}
}

// Env is the environment entries that name a (HOME, USER, LOGNAME), for a
// process started as a by a service that runs as another account.
func (a *Account) Env() []string {
	env := []string{"USER=" + a.Name, "LOGNAME=" + a.Name}
	if a.Home != "" {
		env = append(env, "HOME="+a.Home)
	}
	return env
}

// ServerAccount decides which account runs Strata's server from root with
// python: nil means this process's own (an unprivileged service, or a
// root-owned install nobody else can change); an account means that one
// (the install's owner: root never runs code its owner can edit); an error
// (a *ServerRefusedError) means neither is safe.
//
// For a root-owned install it looks at everything Strata executes or
// loads: the folder, serve/ (all of it), engine/ (all of it), the venv
// (all of it; its python link judged by its target and the target's
// folders, never by the link's own mode, which is always 777), and loads:
// what the caller knows Strata will run or read (the config, the programs
// and folders it names, the paths in its env such as LD_PRELOAD and
// PYTHONPATH). Any of them another account could change is a refusal.
func ServerAccount(root, python string, loads ...string) (*Account, error) {
	if !Privileged() {
		return nil, nil
	}
	own, err := OwnerOf(root)
	if err != nil {
		return nil, err
	}
	if own.UID != 0 {
		return own, nil
	}
	paths := []string{root, filepath.Join(root, "serve", "server.py")}
	if python != "" {
		paths = append(paths, python)
		if real, err := filepath.EvalSymlinks(python); err == nil && real != python {
			paths = append(paths, real)
		}
	}
	paths = append(paths, loads...)
	why := ""
	for _, p := range paths {
		if p != "" {
			if why = othersCanChange(p); why != "" {
				break
			}
		}
	}
	if why == "" {
		for _, d := range []string{filepath.Join(root, "serve"), filepath.Join(root, "engine"), filepath.Join(root, ".venv")} {
			if why = othersCanChangeIn(d); why != "" {
				break
			}
		}
	}
	if why != "" {
		return nil, &ServerRefusedError{Root: root, Reason: why,
			Fix: fmt.Sprintf("Give the folder to the account that uses Strata (sudo chown -R ACCOUNT %s), and the service runs Strata as that account; or make it and what its config names root's alone (sudo chown -R root:root %s; sudo chmod -R go-w %s)", root, root, root)}
	}
	return nil, nil
}

// maxTreeEntries bounds othersCanChangeIn (a venv holds a few thousand).
const maxTreeEntries = 200000

// othersCanChangeIn is othersCanChange for dir and everything in it
// (links judged by their owner alone: their mode means nothing, and what
// they point to is checked where it is named). "" when dir is missing.
func othersCanChangeIn(dir string) string {
	if _, err := os.Lstat(dir); err != nil {
		return ""
	}
	if why := othersCanChange(dir); why != "" {
		return why
	}
	n := 0
	why := ""
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || why != "" {
			return filepath.SkipAll
		}
		if n++; n > maxTreeEntries {
			why = fmt.Sprintf("%s holds more than %d files: too many to check", dir, maxTreeEntries)
			return filepath.SkipAll
		}
		why = entryChangeable(p, fi, false)
		return nil
	})
	return why
}

// entryChangeable says how an account other than root could change the
// entry p itself (fi from Lstat): not through the folders above it.
// inFolderChain: p is a folder above the checked path (a sticky folder's
// other writers cannot replace what is not theirs).
func entryChangeable(p string, fi os.FileInfo, inFolderChain bool) string {
	sys := fi.Sys().(*syscall.Stat_t)
	mode := fi.Mode()
	if sys.Uid != 0 {
		who := strconv.Itoa(int(sys.Uid))
		if u, err := user.LookupId(who); err == nil {
			who = u.Username
		}
		return fmt.Sprintf("%s belongs to %s", p, who)
	}
	if mode&os.ModeSymlink != 0 {
		return "" // a link's mode is always 777 and means nothing
	}
	sticky := mode&os.ModeSticky != 0 && mode.IsDir() && inFolderChain
	switch {
	case mode.Perm()&0o002 != 0 && !sticky:
		return fmt.Sprintf("every account may change %s (mode %o)", p, mode.Perm())
	case mode.Perm()&0o020 != 0 && sys.Gid != 0 && !sticky:
		g := strconv.Itoa(int(sys.Gid))
		if gr, err := user.LookupGroupId(g); err == nil {
			g = gr.Name
		}
		return fmt.Sprintf("the group %s may change %s (mode %o)", g, p, mode.Perm())
	}
	return ""
}

// othersCanChange says how an account other than root could change p or
// replace it (through p or any folder above it); "" when none can.
func othersCanChange(p string) string {
	p, err := filepath.Abs(p)
	if err != nil {
		return err.Error()
	}
	first := true
	for {
		st, err := os.Lstat(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && first {
				return "" // checked again when it exists (the supervisor refuses a missing file)
			}
			return err.Error()
		}
		if why := entryChangeable(p, st, !first); why != "" {
			return why
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p, first = parent, false
	}
}

// WritePrivate replaces path with data, readable only by root and reader
// (nil: root alone), never by anyone else at any moment: the temporary
// file is created 0400 and given to reader before the data is written.
func WritePrivate(path string, data []byte, reader *Account) error {
	return replacePrivate(path, data, 0o400, func(f *os.File, _ string) error {
		if err := f.Chmod(0o400); err != nil { // whatever the umask
			return err
		}
		if reader != nil && reader.UID != uint32(os.Geteuid()) {
			if err := f.Chown(int(reader.UID), -1); err != nil {
				return fmt.Errorf("giving %s to %s: %w", path, reader, err)
			}
		}
		return nil
	})
}

// GrantRead lets a read path (a file the service owns, such as the
// companion's ssh key) without giving it to anyone else: the file becomes
// a's, mode 0600, and the folders above it up to dir are made traversable
// (0711: a cannot list them).
func GrantRead(path, dir string, a *Account) error {
	if a == nil || !Privileged() {
		return nil
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	if err := os.Chown(path, int(a.UID), -1); err != nil {
		return err
	}
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o011 != 0o011 {
			// Only search is added: a sticky or setgid bit stays.
			os.Chmod(d, st.Mode()&(os.ModePerm|os.ModeSticky|os.ModeSetgid)|0o011)
		}
		if d == dir || d == filepath.Dir(d) {
			return nil
		}
	}
}

// Lookup is the local account named name.
func Lookup(name string) (*Account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("there is no account %q on this PC", name)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, err
	}
	return byUID(uint32(uid))
}
