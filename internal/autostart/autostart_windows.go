package autostart

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// Entry is the tray's login entry on Windows. There are two places it can
// be, and the tray and the wizard read both:
//
//   - HKLM\Software\Microsoft\Windows\CurrentVersion\Run "StrataCompanionTray",
//     written by the installer when its "start the tray icon when anyone
//     signs in" box is ticked (for every user; only an administrator may
//     change it);
//   - the same value under HKCU, written when a user turns it on for
//     themselves in the tray or the wizard.
//
// A user turns the machine-wide entry off for themselves the way Task
// Manager's Startup tab does: a "disabled" mark under HKCU\...\Explorer\
// StartupApproved\Run, which Windows honours at sign-in. Turning it on again
// removes that mark; no second entry is written, so the tray never starts
// twice.
type Entry struct {
	// Exe is the program to start (default: this executable).
	Exe string
}

const (
	runKey      = `Software\Microsoft\Windows\CurrentVersion\Run`
	approvedKey = `Software\Microsoft\Windows\CurrentVersion\Explorer\StartupApproved\Run`
	// RunValue is the value's name in both Run keys (the installer's name).
	RunValue = "StrataCompanionTray"
	// oldRunValue is what earlier trays wrote under HKCU: read and removed.
	oldRunValue = "Strata Companion tray"
)

func hasValue(root registry.Key, path string, names ...string) bool {
	k, err := registry.OpenKey(root, path, registry.QUERY_VALUE)
	if err != nil {
		return false
	}
	defer k.Close()
	for _, n := range names {
		if _, _, err := k.GetStringValue(n); err == nil {
			return true
		}
	}
	return false
}

// machineWide reports the installer's entry for every user.
func machineWide() bool { return hasValue(registry.LOCAL_MACHINE, runKey, RunValue) }

// disabledForMe reports the user's StartupApproved mark on the machine-wide
// entry: a binary value whose first byte is odd (3) when disabled.
func disabledForMe() bool {
	k, err := registry.OpenKey(registry.CURRENT_USER, approvedKey, registry.QUERY_VALUE)
	if err != nil {
		return false
	}
	defer k.Close()
	b, _, err := k.GetBinaryValue(RunValue)
	return err == nil && len(b) > 0 && b[0]&1 == 1
}

// Enabled reports whether the tray starts when this user signs in.
func (a Entry) Enabled() (bool, error) {
	if hasValue(registry.CURRENT_USER, runKey, RunValue, oldRunValue) {
		return true, nil
	}
	return machineWide() && !disabledForMe(), nil
}

// Set turns the entry on or off for this user.
func (a Entry) Set(on bool) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE|registry.QUERY_VALUE)
	if err != nil {
		return fmt.Errorf("opening HKCU\\%s: %w", runKey, err)
	}
	defer k.Close()
	for _, n := range []string{RunValue, oldRunValue} {
		if err := k.DeleteValue(n); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf("removing the autostart entry: %w", err)
		}
	}
	if machineWide() {
		return approve(on)
	}
	if !on {
		return nil
	}
	exe := a.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	return k.SetStringValue(RunValue, `"`+exe+`"`)
}

// approve writes the StartupApproved mark for the machine-wide entry: 2
// (enabled) or 3 (disabled) and the time of the change, as Windows does.
func approve(on bool) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, approvedKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("opening HKCU\\%s: %w", approvedKey, err)
	}
	defer k.Close()
	b := make([]byte, 12)
	b[0] = 2
	if !on {
		b[0] = 3
		ft := windows.NsecToFiletime(time.Now().UnixNano())
		binary.LittleEndian.PutUint32(b[4:], ft.LowDateTime)
		binary.LittleEndian.PutUint32(b[8:], ft.HighDateTime)
	}
	return k.SetBinaryValue(RunValue, b)
}
