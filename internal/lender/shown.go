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
	"github.com/strata-companion/companion/internal/lendshown"
)

// writeShown writes the record's view for its account, as that account.
func writeShown(ctx context.Context, r *Record) error {
	a, err := account.Lookup(r.User)
	if err != nil {
		return err
	}
	s := lendshown.Shown{Name: r.Name}
	if c, err := r.Code.Valid(time.Now()); err == nil {
		s.Code, s.Expires = c.String(), r.Code.Expires
	}
	for _, p := range r.Paired {
		s.Paired = append(s.Paired, p.From)
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	path := lendshown.File(a.Home)
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
	path := lendshown.File(a.Home)
	if runtime.GOOS == "windows" {
		os.Remove(path)
		return
	}
	asowner.Command(ctx, a, "/", nil, "rm", "-f", "--", path).Run()
}
