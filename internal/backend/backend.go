// Package backend is the one owner of the companion's state on disk: every
// change to Strata's config and to the companion's settings goes through a
// Backend. The service's daemon hosts one behind the control API; the CLI
// hosts one in-process only when no service runs. Nothing here speaks HTTP or
// parses flags.
//
// The rules it keeps:
//   - every read-modify-write of the settings (and every config edit) runs
//     under one in-process mutex plus a cross-process lock on a file beside
//     the settings (settings.json.lock), so a CLI and a service, or two CLIs,
//     never interleave;
//   - a config edit re-reads the file right before the rename and refuses
//     (ConflictError) when a person or another program changed it; the backup
//     holds what was on disk at that moment;
//   - the settings are written before the config; when the config cannot be
//     written the settings are put back, so the two never disagree;
//   - one event per change, published after the change is on disk.
package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/filelock"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// SettingsChanged is the event kind of a settings-only change (fallback,
// wake, idle stop, pairing, prepare results, n_embd).
const SettingsChanged = events.SettingsChanged

// Options configure a Backend.
type Options struct {
	// SettingsPath is the companion's settings file (default
	// locations.SettingsFile()); the lock file is SettingsPath + ".lock".
	SettingsPath string
	// StrataRoot and ConfigPath: the Strata install and the config in use.
	StrataRoot, ConfigPath string
	// RelayExe is strata-vision-relay ("" = beside this program).
	RelayExe string
	// Publish receives one event per change, after it is on disk.
	Publish func(events.Event)
	// VRAMTotalMiB tells the server GPU's memory for --vram-reserve-mib
	// (nil or 0: unknown, 700 MiB).
	VRAMTotalMiB func(ctx context.Context, configPath string) int
	// LockWait bounds the wait for the cross-process lock (default 10 s);
	// past it a change is refused with a ConflictError naming the holder.
	LockWait time.Duration
	// KeyFile is the companion's own key for the second PC (default
	// locations.RelayKeyFile()): the only key file a second-PC record may
	// name, whatever a caller sends.
	KeyFile string
	// CheckHostKey looks at the host a second-PC record names and says
	// whether it presents that record's host key (default: sshx.CheckHostKey,
	// 10 s).
	CheckHostKey func(ctx context.Context, ep sshx.Endpoint, hostKey string) error
}

// Backend owns the settings and the Strata config.
type Backend struct {
	o  Options
	mu sync.Mutex
}

// New returns a backend; it reads nothing yet.
func New(o Options) *Backend {
	if o.SettingsPath == "" {
		o.SettingsPath = locations.SettingsFile()
	}
	if o.LockWait == 0 {
		o.LockWait = 10 * time.Second
	}
	if o.KeyFile == "" {
		o.KeyFile = locations.RelayKeyFile()
	}
	if o.CheckHostKey == nil {
		o.CheckHostKey = func(ctx context.Context, ep sshx.Endpoint, hostKey string) error {
			return sshx.CheckHostKey(ctx, ep, hostKey, 10*time.Second)
		}
	}
	return &Backend{o: o}
}

// SettingsPath is the settings file this backend owns.
func (b *Backend) SettingsPath() string { return b.o.SettingsPath }

// ConfigPath is the Strata config this backend edits.
func (b *Backend) ConfigPath() string { return b.o.ConfigPath }

// LockPath is the cross-process lock file beside the settings.
func LockPath(settingsPath string) string { return settingsPath + ".lock" }

// ConflictError is a change refused because someone else changed the same
// file or holds the lock: nothing was written; trying again is safe.
type ConflictError struct{ Err error }

func (e *ConflictError) Error() string { return e.Err.Error() }
func (e *ConflictError) Unwrap() error { return e.Err }

// StatusCode is its API status (controlapi.StatusOf): a conflict.
func (e *ConflictError) StatusCode() int { return http.StatusConflict }

// RequestError is a change that cannot be made as asked (bad placement, no
// second PC, a config Strata would not start with): fix the request.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// StatusCode is its API status (controlapi.StatusOf): a bad request.
func (e *RequestError) StatusCode() int { return http.StatusBadRequest }

// lock takes the in-process mutex, then the cross-process lock.
func (b *Backend) lock(ctx context.Context) (func(), error) {
	b.mu.Lock()
	wctx, cancel := context.WithTimeout(ctx, b.o.LockWait)
	defer cancel()
	l, err := filelock.Acquire(wctx, LockPath(b.o.SettingsPath))
	if err != nil {
		b.mu.Unlock()
		var he *filelock.HeldError
		if errors.As(err, &he) {
			who := "another program"
			if he.PID > 0 {
				who = fmt.Sprintf("another program (process %d)", he.PID)
			}
			return nil, &ConflictError{fmt.Errorf("%s has been changing the companion's settings for %s; nothing was changed: try again when it is done", who, b.o.LockWait)}
		}
		return nil, explain(err, LockPath(b.o.SettingsPath))
	}
	_ = l.WritePID()
	return func() { l.Unlock(); b.mu.Unlock() }, nil
}

// lockFor is lock, or only the in-process mutex for a dry run.
func (b *Backend) lockFor(ctx context.Context, dryRun bool) (func(), error) {
	if !dryRun {
		return b.lock(ctx)
	}
	b.mu.Lock()
	return b.mu.Unlock, nil
}

// Settings reads the settings as they are on disk now.
func (b *Backend) Settings() (*settings.Settings, error) { return settings.Load(b.o.SettingsPath) }

// Update is the one read-modify-write of the settings: fn changes a fresh
// copy read under the lock; the result is saved (when fn changed anything)
// and one SettingsChanged event with what says what changed is published.
// Pairing records, prepare results and any future setting go through it.
func (b *Backend) Update(ctx context.Context, what string, fn func(*settings.Settings) error) (*settings.Settings, error) {
	unlock, err := b.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, err := settings.Load(b.o.SettingsPath)
	if err != nil {
		return nil, err
	}
	before, _ := os.ReadFile(b.o.SettingsPath)
	if err := fn(s); err != nil {
		return nil, err
	}
	changed, err := b.save(s, before)
	if err != nil {
		return nil, err
	}
	if changed {
		b.publish(eventSettings(what, b.o.SettingsPath))
	}
	return s, nil
}

// save writes s when its bytes differ from before; it reports whether it wrote.
func (b *Backend) save(s *settings.Settings, before []byte) (bool, error) {
	out, err := settings.Encode(s)
	if err != nil {
		return false, err
	}
	if before != nil && string(out) == string(before) {
		return false, nil
	}
	if err := settings.WriteBytes(b.o.SettingsPath, out); err != nil {
		return false, explain(err, b.o.SettingsPath)
	}
	return true, nil
}

// eventSettings is the one SettingsChanged event of a change.
func eventSettings(what, path string) events.Event {
	return events.New(what, events.SettingsChangedDetails{Path: path})
}

func (b *Backend) publish(e events.Event) {
	if b.o.Publish != nil {
		b.o.Publish(e)
	}
}

// localEncoder is this PC's strata-vision in the install.
func (b *Backend) localEncoder() string {
	if b.o.StrataRoot == "" {
		return ""
	}
	name := "strata-vision"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(b.o.StrataRoot, "engine", name)
}

// config reads the Strata config in use.
func (b *Backend) config() (*strataconfig.Config, error) {
	if b.o.ConfigPath == "" {
		return nil, &RequestError{errors.New("no Strata config is known: run the setup wizard, or pass --strata-root / --config")}
	}
	return strataconfig.Read(b.o.ConfigPath)
}
