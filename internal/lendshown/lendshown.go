// Package lendshown is the lending account's own view of lending its GPU
// (strata-service lend): this PC's name, the pairing code while one is
// valid and the PCs paired so far. internal/lender writes it, as that
// account, readable by it alone; the account's tray (and its setup window)
// read it. It is its own small package so that a reader links nothing of
// the lender (ssh, the announcement, the agent): a lending PC runs no
// Strata and no control API, and this file is all its tray needs.
package lendshown

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// Shown is what the lending account may see of lending.
type Shown struct {
	Name    string    `json:"name"`
	Code    string    `json:"code,omitempty"` // formatted like ABCD-EFGH; "" when none is valid
	Expires time.Time `json:"expires,omitempty"`
	// Paired names the PCs paired so far.
	Paired []string `json:"paired,omitempty"`
}

// CodeAt is the code as it stands at now: "" once it has expired.
func (s *Shown) CodeAt(now time.Time) string {
	if s == nil || s.Code == "" || !now.Before(s.Expires) {
		return ""
	}
	return s.Code
}

// File is the lending account's view, in the folder of the account whose
// home is home.
func File(home string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(home, "AppData", "Local", "StrataCompanion", "lending.json")
	}
	return filepath.Join(home, ".config", "strata-companion", "lending.json")
}

// Read reads this account's view. os.ErrNotExist: this PC does not lend
// for this account. A code that has expired is cleared.
func Read() (*Shown, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	return ReadFile(File(home))
}

// ReadFile reads the view at path (Read's file, or a test's).
func ReadFile(path string) (*Shown, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Shown
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	s.Code = s.CodeAt(time.Now())
	return &s, nil
}
