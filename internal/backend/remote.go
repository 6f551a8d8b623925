package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/secondpc"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
)

// The backend is the second-PC code's Recorder (secondpc.Recorder): pairing
// records, prepare results and unpairing are read-modify-writes of the
// settings under the backend's locks, one event each.
var _ secondpc.Recorder = (*Backend)(nil)

// Paired is the second PC recorded now (nil: none).
func (b *Backend) Paired(context.Context) (*settings.Remote, error) {
	s, err := b.Settings()
	if err != nil {
		return nil, err
	}
	return s.Remote, nil
}

// RecordPairing stores a second PC just paired (secondpc.MergePairing).
func (b *Backend) RecordPairing(ctx context.Context, r settings.Remote) error {
	_, err := b.RecordRemote(ctx, controlapi.RemoteRecord{Pairing: &r})
	return err
}

// RecordPrepare stores what prepare found on the paired PC.
func (b *Backend) RecordPrepare(ctx context.Context, res prepare.Result) error {
	_, err := b.RecordRemote(ctx, controlapi.RemoteRecord{Prepare: secondpc.Prepared(res)})
	return err
}

// RecordUnpair forgets the second PC.
func (b *Backend) RecordUnpair(ctx context.Context) error {
	_, err := b.RecordRemote(ctx, controlapi.RemoteRecord{Unpair: true})
	return err
}

// RecordRemote applies one second-PC record (POST /v1/remote) and returns
// the record after it.
func (b *Backend) RecordRemote(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error) {
	n := 0
	for _, set := range []bool{rec.Pairing != nil, rec.Prepare != nil, rec.Replace != nil, rec.Unpair} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, &RequestError{errors.New("a second-PC record sets exactly one of pairing, prepare, replace or unpair")}
	}
	for _, r := range []*settings.Remote{rec.Pairing, rec.Replace} {
		if r != nil && r.Host == "" {
			return nil, &RequestError{errors.New("a second-PC record needs the host it is about")}
		}
	}
	if p := rec.Prepare; p != nil {
		if err := (settings.Remote{Host: "x", OS: p.OS, Arch: p.Arch, RemoteDir: p.RemoteDir, EncoderPath: p.EncoderPath}).Check(); err != nil {
			return nil, &RequestError{err}
		}
	}
	cur, err := b.Settings()
	if err != nil {
		return nil, err
	}
	for _, r := range []*settings.Remote{rec.Pairing, rec.Replace} {
		if r == nil {
			continue
		}
		if err := b.checkRecord(ctx, cur.Remote, r); err != nil {
			return nil, err
		}
	}
	var what string
	switch {
	case rec.Pairing != nil:
		what = "paired with the second PC " + rec.Pairing.Host
	case rec.Prepare != nil:
		what = "prepared the second PC"
	case rec.Replace != nil:
		what = "recorded the second PC " + rec.Replace.Host
	default:
		what = "unpaired the second PC"
	}
	s, err := b.Update(ctx, what, func(s *settings.Settings) error {
		switch {
		case rec.Pairing != nil:
			m := secondpc.MergePairing(s.Remote, *rec.Pairing)
			s.Remote = &m
		case rec.Prepare != nil:
			if s.Remote == nil || s.Remote.Host == "" {
				return &RequestError{secondpc.ErrNotPaired}
			}
			secondpc.ApplyPrepare(s.Remote, secondpc.PrepareResultOf(rec.Prepare))
		case rec.Replace != nil:
			r := *rec.Replace
			s.Remote = &r
		default:
			s.Remote = nil
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Remote, nil
}

// RemoveSettings deletes the settings file under the lock (the rollback of
// a first setup that is removing the service it installed); one event.
func (b *Backend) RemoveSettings(ctx context.Context) error {
	unlock, err := b.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(b.o.SettingsPath); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("removing the companion settings: %w", explain(err, b.o.SettingsPath))
	}
	b.publish(eventSettings("the companion settings were removed", b.o.SettingsPath))
	return nil
}

// checkRecord decides whether a second-PC record from a caller may be
// stored: what the privileged side will dial, log in to and run comes only
// from pairing and prepare, so the record must pass settings.Remote.Check
// (no shell syntax, a real host, port and user), may name no key file but
// the companion's own (r.KeyFile is set to it), and must carry the host key
// the host itself presents (the service looks, unless host, port and key are
// the ones recorded already).
func (b *Backend) checkRecord(ctx context.Context, old, r *settings.Remote) error {
	if err := r.Check(); err != nil {
		return &RequestError{err}
	}
	own := filepath.Clean(b.o.KeyFile)
	if r.KeyFile != "" && filepath.Clean(r.KeyFile) != own {
		return &RequestError{fmt.Errorf("key_file %q is not the companion's own key (%s): a second-PC record takes no key of the caller's choosing; pair the second PC (strata-service remote pair) and the companion uses its own", r.KeyFile, own)}
	}
	r.KeyFile = own
	if r.HostKey == "" {
		return &RequestError{errors.New("a second-PC record needs the host key that pairing pinned; pair the second PC (strata-service remote pair)")}
	}
	if sameHost(old, r) {
		return nil
	}
	if err := b.o.CheckHostKey(ctx, sshx.Endpoint{Host: r.Host, Port: r.Port, User: r.User}, r.HostKey); err != nil {
		return &RequestError{fmt.Errorf("the second PC's host key could not be confirmed (%v); the record was not stored: pair the second PC again while it is on (strata-service remote pair)", err)}
	}
	return nil
}

// sameHost: r names the host, port and host key recorded in old.
func sameHost(old, r *settings.Remote) bool {
	return old != nil && old.Host == r.Host && old.Port == r.Port && old.HostKey == r.HostKey
}
