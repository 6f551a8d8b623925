//go:build linux

package testenv

import (
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// WindowsPC is a Windows second PC the tests can reach: a real OpenSSH sshd
// on loopback whose every command runs as Windows' OpenSSH runs it with
// cmd.exe as the default shell (`cmd.exe /c <command>`, wine's cmd.exe, in
// %USERPROFILE%), and whose sftp subsystem shows the wine prefix's C: drive
// as Windows' sftp-server does (/C:/users/root/...). `ver` and
// %PROCESSOR_ARCHITECTURE% answer as on Windows; Go programs built for
// windows/amd64 run there (the ProcessPrng shim is in system32).
type WindowsPC struct {
	*SSHD
	Wine *Wine
	// Profile is %USERPROFILE% in Windows words; ProfileDir its Linux path.
	Profile, ProfileDir string
}

// WindowsPCOptions tune the PC.
type WindowsPCOptions struct {
	// ExtraConfig lines go into sshd_config.
	ExtraConfig []string
	// Wine is the prefix to use (WineFor, in a package without
	// testenv.Main); default SharedWine.
	Wine *Wine
}

var hostBuilds sync.Map // prefix folder + package -> Linux binary path under that wine's Dir

// StartWindowsPC starts a Windows second PC on this test binary's shared wine
// prefix (SharedWine: TestMain must call testenv.Main), or on opts.Wine. Its sshd stops when
// t ends; files written into the prefix stay until the binary ends, so tests
// sharing it use folders of their own.
func StartWindowsPC(t testing.TB, opts WindowsPCOptions) *WindowsPC {
	t.Helper()
	LookPath(t, "sshd")
	w := opts.Wine
	if w == nil {
		w = SharedWine(t)
	}
	shell := w.hostBuild(t, "github.com/strata-companion/companion/internal/testenv/cmd/winpc-shell")
	launcher := filepath.Join(w.System32(), "strata-winpc-cmd.exe")
	if _, err := os.Stat(launcher); err != nil {
		if err := CopyFile(w.Build(t, "github.com/strata-companion/companion/internal/testenv/cmd/winpc-cmd"), launcher, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	name := "root"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if v := os.Getenv("USER"); v != "" {
		name = v
	}
	pc := &WindowsPC{Wine: w, Profile: `C:\users\` + name, ProfileDir: w.Drive(`users\` + name)}
	if err := os.MkdirAll(pc.ProfileDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "winpc.json")
	cfg, _ := json.Marshal(map[string]any{
		"Env": w.Env, "Drive": w.Drive(""), "ProfileDir": pc.ProfileDir, "Profile": pc.Profile,
		"Launcher": `C:\windows\system32\strata-winpc-cmd.exe`,
	})
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	extra := append([]string{
		"ForceCommand " + shell + " " + cfgFile,
		"Subsystem sftp " + shell + " " + cfgFile + " --sftp",
	}, opts.ExtraConfig...)
	// sshd also reads the files Windows' OpenSSH reads for this login: the
	// user's own and, for administrators, ProgramData's.
	pc.SSHD = StartSSHD(t, SSHDOptions{ExtraConfig: extra, AuthorizedKeysFiles: []string{
		filepath.Join(pc.ProfileDir, ".ssh", "authorized_keys"),
		w.Drive(`ProgramData\ssh\administrators_authorized_keys`),
	}})
	return pc
}

// hostBuild builds a Linux program of this module once per test binary.
func (w *Wine) hostBuild(t testing.TB, pkg string) string {
	t.Helper()
	// Keyed by the prefix too: a WineFor prefix (and the build in it) is
	// gone when its test ends, and the next test's PC needs one of its own.
	key := w.Dir + "\x00" + pkg
	if p, ok := hostBuilds.Load(key); ok {
		return p.(string)
	}
	out := filepath.Join(w.Dir, "bin", filepath.Base(pkg))
	if err := BuildGo(out, pkg, "linux", runtimeArch()); err != nil {
		t.Fatal(err)
	}
	hostBuilds.Store(key, out)
	return out
}

// Path is the Linux path of a Windows path on this PC (C:\... or a path
// relative to the profile).
func (pc *WindowsPC) Path(win string) string {
	if len(win) > 1 && win[1] == ':' {
		return pc.Wine.Drive(win)
	}
	return filepath.Join(pc.ProfileDir, filepath.FromSlash(strings.ReplaceAll(win, `\`, "/")))
}

// Dial logs in with the fixture's client key and the pinned host key.
func (pc *WindowsPC) Dial(t testing.TB) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial("tcp", pc.Addr(), &ssh.ClientConfig{
		User:            pc.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(pc.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(pc.HostSigner.PublicKey()),
	})
	if err != nil {
		t.Fatalf("dialing the Windows test PC: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// SFTP opens the PC's sftp subsystem on c.
func (pc *WindowsPC) SFTP(t testing.TB, c *ssh.Client) *sftp.Client {
	t.Helper()
	s, err := sftp.NewClient(c)
	if err != nil {
		t.Fatalf("sftp on the Windows test PC: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// InstallNvidiaSMI puts a stand-in nvidia-smi.exe (one RTX 3060 Laptop GPU)
// into C:\Windows\System32, where modern drivers put the real one.
func (pc *WindowsPC) InstallNvidiaSMI(t testing.TB) {
	t.Helper()
	exe := pc.Wine.Build(t, "github.com/strata-companion/companion/internal/testenv/cmd/nvidia-smi-standin")
	if err := CopyFile(exe, filepath.Join(pc.Wine.System32(), "nvidia-smi.exe"), 0o755); err != nil {
		t.Fatal(err)
	}
}
