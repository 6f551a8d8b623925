//go:build !windows

package cli

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
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
