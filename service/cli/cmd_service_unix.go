//go:build !windows

package cli

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"strings"

	kservice "github.com/kardianos/service"
)

func isAdmin() bool { return os.Geteuid() == 0 }

// serviceWorkDir is neutral: not the installing user's home, not the
// Strata root (the supervisor sets that for Strata itself).
func serviceWorkDir() string { return "/" }

// setRecovery: systemd's Restart=on-failure and launchd's KeepAlive are in
// the service definition itself.
func setRecovery() error { return nil }

// runUnderServiceManager: kardianos' own Run is right on Unix.
func runUnderServiceManager(*program) (bool, error) { return false, nil }

// startedByServiceManager: kardianos' Interactive answers this on Unix.
func startedByServiceManager() bool { return false }

// prepareServiceUser makes the companion's machine-wide folder for a
// service that runs as name (not root), owned by that account.
func prepareServiceUser(name string) error {
	if name == "" || name == "root" {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("--user %s: no such account on this machine", name)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, d := range []string{systemStateHome, systemStateHome + "/logs", systemStateHome + "/state"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
		if err := os.Chown(d, uid, gid); err != nil {
			return fmt.Errorf("giving %s to %s: %w", d, name, err)
		}
	}
	secrets := systemStateHome + "/secrets"
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		return err
	}
	return os.Chown(secrets, uid, gid)
}

// serviceManagerWorks says whether this system's service manager can keep
// a service running (why not, when it cannot). kardianos picks SysV
// scripts wherever /etc/init.d exists, also in a container whose first
// process is a shell or a stand-in init: only a real init counts.
func serviceManagerWorks() (bool, string) {
	if kservice.ChosenSystem() == nil {
		return false, "this system has no service manager strata-service knows"
	}
	if runtime.GOOS != "linux" {
		return true, ""
	}
	b, err := os.ReadFile("/proc/1/comm")
	switch first := strings.TrimSpace(string(b)); {
	case err != nil:
		return false, "this system's first process cannot be read (" + err.Error() + ")"
	case first == "systemd" || first == "init" || first == "openrc-init":
		return true, ""
	default:
		return false, "this system's first process is " + first + ", not a service manager: a container?"
	}
}

// lenderLogWords says where the lender service's words are.
const lenderLogWords = "see its log (journalctl -u " + lenderServiceName + ", or /var/log/" + lenderServiceName + ".err without systemd)"

// runLenderUnderServiceManager: systemd and the others run `lend
// --foreground` as it is (SIGTERM ends it).
func runLenderUnderServiceManager(*cliEnv, func(context.Context) error) (bool, error) {
	return false, nil
}
