package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/strata-companion/companion/internal/asowner"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/loglines"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// followEngineLog reads the lines appended to the config's engine log (the
// engine's and encoder's stderr, the relay's event lines) from the moment
// the supervisor starts, and publishes what it recognises. It follows by
// change notification (fsnotify: inotify, kqueue, ReadDirectoryChangesW) on
// the folders of the log and of the Strata config, so an idle server costs
// no wake-ups; folders are watched rather than files because the log may not
// exist yet or be replaced, and the config is replaced by an atomic rename.
// A slow backstop poll (FollowEvery, default 5 min, or with each calm health
// poll while a ready server runs) catches what notification missed (a
// change made by another machine on a network share; Strata's own writes
// notify); without a watcher at all it polls every 500 ms as before.
//
// Run makes the first round itself, before it starts the server, so the
// lines a fast server writes at once are not mistaken for old ones.
func (s *Supervisor) followEngineLog(ctx context.Context, f *logFollow) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.pollEngineLog(ctx, f, min(s.cfg.FollowEvery, 500*time.Millisecond))
		return
	}
	defer w.Close()
	watched := map[string]bool{}
	watch := func() {
		for _, p := range []string{s.cfg.ConfigPath, f.path} {
			if p == "" {
				continue
			}
			dir := filepath.Dir(p)
			if !watched[dir] && w.Add(dir) == nil {
				watched[dir] = true
			}
		}
	}
	watch()
	t := time.NewTicker(s.cfg.FollowEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(s.cfg.FollowEvery) // after nudges stopped, the plain period again
		case <-s.healthRound:
			// The ticker fires only if these nudges stop (the server
			// stopped): FollowEvery after the last one, with slack so the
			// two do not wake the service twice.
			t.Reset(s.cfg.FollowEvery + s.cfg.CalmHealthEvery)
		case ev, ok := <-w.Events:
			if !ok {
				s.pollEngineLog(ctx, f, min(s.cfg.FollowEvery, 500*time.Millisecond))
				return
			}
			if n := filepath.Clean(ev.Name); n != filepath.Clean(f.path) && n != filepath.Clean(s.cfg.ConfigPath) {
				continue // another file in the same folder
			}
		case _, ok := <-w.Errors: // e.g. an overflowed queue: the round below catches up
			if !ok {
				s.pollEngineLog(ctx, f, min(s.cfg.FollowEvery, 500*time.Millisecond))
				return
			}
		}
		s.logRound(f)
		watch() // the log's folder may have appeared, or the config named another log
	}
}

// pollEngineLog is the follower without change notification.
func (s *Supervisor) pollEngineLog(ctx context.Context, f *logFollow, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.logRound(f)
	}
}

// logFollow is where the follower is in the engine log.
type logFollow struct {
	path   string
	offset int64 // -1: start at the current end
	rest   []byte
	// The config as last parsed: it is parsed again only when its size or
	// modification time changed (a vision edit may name another log).
	cfgSize  int64
	cfgMTime time.Time
	cfgRead  bool
}

func newLogFollow() *logFollow { return &logFollow{offset: -1} }

// logRound reads what was appended since the last round.
func (s *Supervisor) logRound(f *logFollow) {
	if st, err := os.Stat(s.cfg.ConfigPath); err == nil && (!f.cfgRead || st.Size() != f.cfgSize || !st.ModTime().Equal(f.cfgMTime)) {
		if sc, err := strataconfig.Read(s.cfg.ConfigPath); err == nil {
			f.cfgRead, f.cfgSize, f.cfgMTime = true, st.Size(), st.ModTime()
			if p := sc.LogPath(); p != f.path {
				f.path, f.offset, f.rest = p, -1, nil
			}
		}
	}
	if f.path != "" {
		f.offset, f.rest = s.readLogFrom(f.path, f.offset, f.rest)
	}
}

func (s *Supervisor) readLogFrom(path string, offset int64, rest []byte) (int64, []byte) {
	// The config names the log: opened with the install owner's rights
	// (asowner: no link of the owner's followed, no FIFO waited on, only
	// what the owner could read).
	owner, _ := asowner.For(filepath.Dir(s.cfg.ConfigPath))
	f, err := asowner.Open(path, -1, owner)
	if err != nil {
		if offset < 0 {
			return 0, nil // it does not exist yet: everything it gets is new
		}
		return offset, rest
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return offset, rest
	}
	if offset < 0 {
		return st.Size(), nil
	}
	if st.Size() < offset { // truncated or replaced: read it from the start
		offset, rest = 0, nil
	}
	if st.Size() == offset {
		return offset, rest
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, rest
	}
	b, err := io.ReadAll(io.LimitReader(f, 4<<20))
	if err != nil {
		return offset, rest
	}
	offset += int64(len(b))
	b = append(rest, b...)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := string(bytes.TrimRight(b[:i], "\r"))
		b = b[i+1:]
		if e, ok := loglines.Parse(loglines.EngineLog, line); ok {
			s.cfg.Events.Publish(e)
		}
	}
	if len(b) > 64<<10 {
		b = nil
	}
	return offset, append([]byte(nil), b...)
}

type health struct {
	Status     string `json:"status"`
	Model      string `json:"model"`
	MaxContext int    `json:"max_context"`
	Images     bool   `json:"images"`
	APIKey     bool   `json:"api_key"`
	Loaded     bool   `json:"loaded"`
	Service    string `json:"service"`
}

type statusVision struct {
	Enabled   bool   `json:"enabled"`
	Available bool   `json:"available"`
	Error     string `json:"error"`
}

// pollHealth asks /health (and /v1/status with the config's key) while p
// lives. A /health that says service "strata" while the server starts is a
// ready signal of its own, in case the `ready:` line was worded otherwise;
// /v1/status's vision block is the nearest thing to the encoder's health.
func (s *Supervisor) pollHealth(ctx context.Context, p *process) {
	// A connection per poll, closed after it: calm polls are 1 or 5 minutes
	// apart, so a kept connection would mostly be dropped in between by the
	// transport's 90 s idle timer: a wake-up of its own for an idle service,
	// and on a VM whose host reclaims idle guest memory meanwhile, a costly
	// one (bench/README.md, "Idle over 300 s"). A loopback dial is cheap.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	base := "http://127.0.0.1:" + strconv.Itoa(p.port)
	var lastVision *statusVision
	calm := false
	var reloadSince time.Time
	t := time.NewTicker(s.cfg.HealthEvery)
	defer t.Stop()
	calmEvery := func() time.Duration {
		if p.vision {
			return s.cfg.CalmHealthEvery
		}
		return 5 * s.cfg.CalmHealthEvery
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.exited:
			return
		case <-p.reload:
			// A reload after an unload: follow it as a start (for as
			// long as a start may take).
			if calm {
				reloadSince = time.Now()
			}
			t.Reset(s.cfg.HealthEvery)
			calm = false
			continue
		case <-t.C:
		}
		var h health
		if getJSON(ctx, hc, base+"/health", "", &h) != nil || h.Service != "strata" {
			continue
		}
		p.mu.Lock()
		ready := p.isReady
		p.mu.Unlock()
		// /health may answer before the model is in (lazy loading, or a
		// server that binds early): it means ready when the model is
		// loaded, or when the start has gone on long enough that the
		// ready line was likely worded otherwise.
		if !ready && (h.Loaded || time.Since(p.started) > 2*time.Minute) {
			if s.foreignNow(p) {
				continue // another account answers on the port too (foreign.go)
			}
			select {
			case s.ready <- readyMsg{proc: p, details: events.ServerReadyDetails{Source: events.Source{Source: "health"},
				URL: base + "/v1", Port: p.port, Model: h.Model, Context: h.MaxContext, Images: &h.Images, APIKey: &h.APIKey}}:
			default:
			}
			continue
		}
		if !ready {
			continue
		}
		// Strata's own unload (idle_unload_s, POST /v1/unload) ends its
		// engine and encoder; the idle one says so in a line, the one on
		// request only here. Loaded again: the next request reloaded both.
		p.mu.Lock()
		wasUnloaded := p.unloaded
		p.unloaded = !h.Loaded
		p.mu.Unlock()
		switch {
		case !h.Loaded && !wasUnloaded:
			s.pub("the model is not loaded (Strata's /health says so)", events.ModelUnloadedDetails{Source: events.Source{Source: "health"}})
		case h.Loaded && wasUnloaded:
			s.pub("the model is loaded again", events.ModelLoadedDetails{Source: events.Source{Source: "health"}, Images: &h.Images})
		}
		if !calm && (h.Loaded || !wasUnloaded || time.Since(reloadSince) > s.cfg.StartTimeout) {
			// Ready (or loaded again): exits come from waitpid and log
			// lines by notification, so health only follows the encoder's
			// availability, and without vision hardly at all.
			calm = true
			t.Reset(calmEvery())
		}
		select {
		case s.healthRound <- struct{}{}: // the log backstop rides along
		default:
		}
		if !p.vision || !h.Loaded {
			continue // nothing to follow, or an encoder gone with the model on purpose
		}
		var st struct {
			Vision *statusVision `json:"vision"`
		}
		if getJSON(ctx, hc, base+"/v1/status", p.apiKey, &st) != nil || st.Vision == nil {
			continue
		}
		v := st.Vision
		if lastVision != nil && *lastVision == *v {
			continue
		}
		changed := lastVision != nil
		lastVision = v
		switch {
		case v.Available && changed:
			s.pub("the vision encoder is available", events.EncoderReadyDetails{Source: events.Source{Source: "status"}})
		case !v.Available && v.Error != "":
			s.pub("the vision encoder is not available: "+v.Error, events.EncoderFailedDetails{Source: events.Source{Source: "status"}, Reason: v.Error})
		}
	}
}

func getJSON(ctx context.Context, hc *http.Client, url, key string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return &httpStatus{resp.StatusCode}
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

// unloadModel asks the server on port to unload its model (POST
// /v1/unload with key), waiting up to UnloadTimeout for its answer.
func unloadModel(ctx context.Context, port int, key string) error {
	ctx, cancel := context.WithTimeout(ctx, UnloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/v1/unload", port), nil)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking Strata to unload its model: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errors.New("this Strata cannot unload its model on request (it has no POST /v1/unload): update Strata, or stop the server to give its memory back")
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("Strata refused to unload its model: HTTP %d", resp.StatusCode)
	}
	return nil
}

// UnloadTimeout bounds the wait for Strata's answer to an unload (it ends
// its engine and encoder first).
const UnloadTimeout = 60 * time.Second

type httpStatus struct{ code int }

func (e *httpStatus) Error() string { return "HTTP " + strconv.Itoa(e.code) }
