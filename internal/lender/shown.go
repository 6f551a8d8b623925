package lender

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/asowner"
)

// Shown is what the lending account may see of lending: the code to show
// (its tray, its setup window) while one is valid. It is written as that
// account, readable by it alone (and the administrators): the account that
// lends is the one person meant to read the code.
type Shown struct {
	Name    string    `json:"name"`
	Code    string    `json:"code,omitempty"`
	Expires time.Time `json:"expires,omitempty"`
	// Paired names the PCs paired so far.
	Paired []string `json:"paired,omitempty"`
}

// ShownFile is the lending account's view of lending, in its own folder.
func ShownFile(home string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(home, "AppData", "Local", "StrataCompanion", "lending.json")
	}
	return filepath.Join(home, ".config", "strata-companion", "lending.json")
}

// ReadShown reads this account's view (the tray). os.ErrNotExist: this PC
// does not lend for this account.
func ReadShown() (*Shown, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(ShownFile(home))
	if err != nil {
		return nil, err
	}
	var s Shown
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	if s.Code != "" && !time.Now().Before(s.Expires) {
		s.Code = ""
	}
	return &s, nil
}

// writeShown writes the record's view for its account, as that account.
func writeShown(ctx context.Context, r *Record) error {
	a, err := account.Lookup(r.User)
	if err != nil {
		return err
	}
	s := Shown{Name: r.Name}
	if c, err := r.Code.Valid(time.Now()); err == nil {
		s.Code, s.Expires = c.String(), r.Code.Expires
	}
	for _, p := range r.Paired {
		s.Paired = append(s.Paired, p.From)
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	path := ShownFile(a.Home)
	if runtime.GOOS == "windows" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
	} else if out, err := asowner.Command(ctx, a, "/", nil, "mkdir", "-p", "-m", "700", filepath.Dir(path)).CombinedOutput(); err != nil {
		return errors.New(string(out))
	}
	return asowner.WriteFile(path, append(b, '\n'), 0o600, a, nil)
}

// removeShown takes the account's view away (lend stop).
func removeShown(ctx context.Context, a *account.Account) {
	path := ShownFile(a.Home)
	if runtime.GOOS == "windows" {
		os.Remove(path)
		return
	}
	asowner.Command(ctx, a, "/", nil, "rm", "-f", "--", path).Run()
}
