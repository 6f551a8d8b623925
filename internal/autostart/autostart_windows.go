package autostart

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows/registry"
)

// Entry is the value "Strata Companion tray" under
// HKCU\Software\Microsoft\Windows\CurrentVersion\Run. It exists only when
// the user turned "Start tray at login" on.
type Entry struct {
	// Exe is the program to start (default: this executable).
	Exe string
}

const runKey = `Software\Microsoft\Windows\CurrentVersion\Run`
const runValue = "Strata Companion tray"

// Enabled reports whether the Run value exists.
func (a Entry) Enabled() (bool, error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if err != nil {
		return false, nil
	}
	defer k.Close()
	_, _, err = k.GetStringValue(runValue)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Set writes or deletes the Run value.
func (a Entry) Set(on bool) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("opening HKCU\\%s: %w", runKey, err)
	}
	defer k.Close()
	if !on {
		if err := k.DeleteValue(runValue); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf("removing the autostart entry: %w", err)
		}
		return nil
	}
	exe := a.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	return k.SetStringValue(runValue, `"`+exe+`"`)
}
