// Package lender is the second PC's side of lending its GPU
// (strata-service lend): it opens the ssh server when none answers, installs
// the agent for the lending account, keeps the pairing code, serves the
// pairing exchange (internal/lend) and undoes all of it on `lend stop`. What
// it changed is written to one root-only record, so stop puts back exactly
// that and nothing else.
package lender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-companion/companion/internal/atomicfile"
	"github.com/strata-companion/companion/internal/filelock"
	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/locations"
)

// Record is what lending changed on this PC, and its code. It lives in the
// secrets folder (administrators and root only): the code is in it.
type Record struct {
	User     string `json:"user"`
	Name     string `json:"name"`
	SSHPort  int    `json:"ssh_port"`
	PairPort int    `json:"pair_port"`
	// SSHServer is what lend found: "kept" (one answered: left as it was),
	// or the unit / service it enabled (undone by stop).
	SSHServer  string `json:"ssh_server"`
	SSHEnabled bool   `json:"ssh_enabled_by_lend,omitempty"`
	// Installed is true when lend installed the ssh server's package or
	// capability itself (stop leaves an installed program installed, only
	// stopped and disabled).
	Installed    bool       `json:"ssh_installed_by_lend,omitempty"`
	FirewallRule string     `json:"firewall_rule,omitempty"`
	AgentDir     string     `json:"agent_dir"`
	KeysFile     string     `json:"keys_file,omitempty"`
	Paired       []Paired   `json:"paired,omitempty"`
	Code         lend.State `json:"code"`
	Started      time.Time  `json:"started"`
}

// Paired is one PC the code let in.
type Paired struct {
	Comment string    `json:"comment"`
	Key     string    `json:"key"` // the authorized_keys blob (base64 field)
	From    string    `json:"from"`
	When    time.Time `json:"when"`
}

// RecordFile is the record's path.
func RecordFile() string { return filepath.Join(locations.Path(locations.SecretsDir), "lend.json") }

func lockFile() string { return RecordFile() + ".lock" }

// ErrNotLending: no record, so nothing to stop or show.
var ErrNotLending = errors.New("this PC is not lending its GPU (no lending record)")

// Load reads the record.
func Load() (*Record, error) {
	b, err := os.ReadFile(RecordFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotLending
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("the lending record %s is unreadable (%v): run `strata-service lend stop` and lend again", RecordFile(), err)
	}
	return &r, nil
}

func save(r *Record) error {
	if _, err := locations.EnsureDir(locations.ConfigDir); err != nil {
		return err
	}
	if _, err := locations.EnsureDir(locations.SecretsDir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(RecordFile(), append(b, '\n'), 0o600)
}

// Update changes the record under the machine-wide lending lock.
func Update(ctx context.Context, edit func(r *Record) error) error {
	if _, err := locations.EnsureDir(locations.SecretsDir); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := filelock.Acquire(ctx, lockFile())
	if err != nil {
		return fmt.Errorf("waiting for the lending record's lock: %w", err)
	}
	defer l.Unlock()
	r, err := Load()
	if errors.Is(err, ErrNotLending) {
		r, err = &Record{}, nil
	}
	if err != nil {
		return err
	}
	if err := edit(r); err != nil {
		return err
	}
	if err := save(r); err != nil {
		return err
	}
	if r.User != "" {
		// The lending account's own view: the code while it is valid.
		if err := writeShown(ctx, r); err != nil {
			return fmt.Errorf("showing the code to %s: %w", r.User, err)
		}
	}
	return nil
}

// NewCode mints a fresh code valid for valid (the old one dies), and
// returns it with its expiry.
func NewCode(ctx context.Context, valid time.Duration) (lend.Code, time.Time, error) {
	if valid <= 0 {
		valid = lend.DefaultValid
	}
	c, err := lend.NewCode()
	if err != nil {
		return "", time.Time{}, err
	}
	exp := time.Now().Add(valid).Truncate(time.Second)
	err = Update(ctx, func(r *Record) error {
		if r.User == "" {
			return ErrNotLending
		}
		r.Code = lend.State{Code: c, Expires: exp, TriesLeft: lend.MaxTries}
		return nil
	})
	return c, exp, err
}

// fileBook is the record's code as a lend.Book: each question reads and
// writes the record under its lock, so `lend code` in another process
// takes effect at once and a restart forgets no wrong try.
type fileBook struct{ ctx context.Context }

func (b fileBook) Current() (lend.Code, error) {
	r, err := Load()
	if err != nil {
		return "", &lend.RefusedError{Kind: lend.RefusedNone}
	}
	return r.Code.Valid(time.Now())
}

func (b fileBook) Wrong() int {
	left := 0
	Update(b.ctx, func(r *Record) error { left = r.Code.Wrong(); return nil })
	return left
}

func (b fileBook) Used() error {
	var used error
	err := Update(b.ctx, func(r *Record) error { used = r.Code.Use(time.Now()); return used })
	if used != nil {
		return used
	}
	return err
}
