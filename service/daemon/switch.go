package daemon

// Switching the config that runs (POST /v1/config) and listing the
// install's configs (GET /v1/configs). A model switch and a first install
// chosen after a bare service install take the same path.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/pathcmp"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/stratainstall"
)

// Configs is GET /v1/configs: the install's strata-*.json, the one running marked.
func (d *Daemon) Configs(ctx context.Context) (*controlapi.ConfigList, error) {
	r := d.current()
	out := &controlapi.ConfigList{Configs: []controlapi.ConfigEntry{}}
	if r.in == nil {
		return out, nil
	}
	out.StrataRoot, out.Running = r.in.Root, r.in.ConfigInUse
	all, err := stratainstall.Find(ctx, stratainstall.Options{Root: r.in.Root})
	if err != nil {
		return nil, controlapi.Conflict(err)
	}
	in := &all[0]
	for _, p := range in.Configs {
		e := backend.ConfigEntry(in, p)
		e.Running = pathcmp.Same(p, r.in.ConfigInUse)
		out.Configs = append(out.Configs, e)
	}
	return out, nil
}

func conflict(format string, a ...any) error {
	return controlapi.Conflict(fmt.Errorf(format, a...))
}

func badRequest(format string, a ...any) error {
	return controlapi.BadRequest(fmt.Errorf(format, a...))
}

// SwitchConfig is POST /v1/config: stop the server, carry the picture
// placement over to the new config (through its backend, with the diff),
// record it in the settings, start the server on it and publish one
// config.switched event. Nothing changes when it is refused.
func (d *Daemon) SwitchConfig(ctx context.Context, req controlapi.ConfigRequest) (*controlapi.ConfigResponse, error) {
	if strings.TrimSpace(req.Config) == "" {
		return nil, badRequest("say which config to run: a tag (coder-iq1_m) or the path of a strata-<tag>.json")
	}
	done, err := d.beginOp("a switch to " + req.Config)
	if err != nil {
		return nil, err
	}
	defer done()
	cur := d.current()
	prev := cur.path()
	if req.IfRunning != "" && !pathcmp.Same(req.IfRunning, prev) {
		running := prev
		if running == "" {
			running = "no config"
		}
		return nil, conflict("the service runs %s, not %s: nothing was changed (look again: strata-service model)", running, req.IfRunning)
	}
	root := req.StrataRoot
	if root == "" {
		if cur.in == nil {
			if !strings.ContainsAny(req.Config, `/\`) {
				return nil, conflict("the service has no Strata install yet: name its folder too (strata-service model use --strata-root DIR %s, or choose it in the setup)", req.Config)
			}
			root = filepath.Dir(backend.ConfigFile("", req.Config))
		} else {
			root = cur.in.Root
		}
	}
	target := backend.ConfigFile(root, req.Config)
	in, err := stratainstall.ResolveContext(ctx, stratainstall.Options{Root: root, Config: target})
	if err != nil {
		return nil, badRequest("%v", err)
	}
	if e := backend.ConfigEntry(in, target); !e.Ready {
		return nil, badRequest("%s cannot run as it is: %s; nothing was changed", target, e.Problem)
	}
	resp := &controlapi.ConfigResponse{Previous: prev, Running: target}
	if cur.in != nil && pathcmp.Same(target, prev) && pathcmp.Same(in.Root, cur.in.Root) {
		resp.Message = fmt.Sprintf("The service already runs %s: nothing to change.", target)
		return resp, nil
	}

	// The placement in use now, carried over to the new config.
	owner := newBackend(in, d.publish)
	s, err := settings.LoadDefault()
	if err != nil {
		return nil, err
	}
	var vreq *controlapi.VisionRequest
	// A model whose config has no vision block gets the placement carried
	// over only with a projector of its own (the planner finds it in the
	// install, never another model's); without one it starts for text
	// only, and the words say why.
	noBlock := false
	name := filepath.Base(target)
	if tc, err := strataconfig.Read(target); err == nil && tc.Vision == nil {
		noBlock = true
		if e := backend.ConfigEntry(in, target); e.ModelName != "" {
			name = e.ModelName
		}
	}
	if cur.in != nil && !req.NoCarry {
		if c, err := strataconfig.Read(prev); err == nil {
			pl := backend.Placement(c, s)
			vreq = &controlapi.VisionRequest{Placement: string(pl), DryRun: true}
			if pl == settings.PlacementCPU && s.CPUThreads > 0 {
				vreq.Threads = s.CPUThreads
			}
		}
	}
	var carry string
	if vreq != nil {
		dry, err := owner.SetVision(ctx, *vreq)
		var np *strataconfig.NoProjectorError
		switch {
		case err != nil && noBlock && errors.As(err, &np):
			carry = fmt.Sprintf("Pictures are off for %s: %s, so it starts for text only.", name, np.Why())
			resp.TextOnly = true
			vreq = nil
		case err != nil:
			carry = fmt.Sprintf("Pictures could not be carried over (%v); %s reads them as it says.", err, filepath.Base(target))
			vreq = nil
		default:
			resp.Diff = dry.Diff
		}
	} else if noBlock {
		carry = fmt.Sprintf("Pictures are off for %s: its config has no vision block, so it starts for text only.", name)
		resp.TextOnly = true
	}
	if !req.Confirm && !req.DryRun {
		if busy := d.busy(ctx); busy {
			return nil, controlapi.Busy(errors.New("Strata is answering a request now: switching stops it. Ask again with confirm to go ahead, or wait until it is done; nothing was changed"))
		}
	}
	if req.DryRun {
		resp.Busy = d.busy(ctx)
		resp.Message = fmt.Sprintf("The service will stop Strata, then start it with %s (text requests wait 30-90 s).", target)
		if resp.Busy {
			resp.Message += " Strata is answering a request now: the switch would cut it."
		}
		if carry != "" {
			resp.Message += " " + carry
		}
		return resp, nil
	}
	d.mu.Lock()
	runCtx := d.runCtx
	d.mu.Unlock()
	if runCtx == nil || runCtx.Err() != nil {
		return nil, conflict("the service is not running its supervisor (starting or stopping): try again")
	}
	if vreq != nil {
		vreq.DryRun = false
		if _, err := owner.SetVision(ctx, *vreq); err != nil {
			return nil, fmt.Errorf("carrying the picture placement over to %s: %w; nothing was switched", target, err)
		}
	}
	if _, err := owner.Update(ctx, "the config in use", func(s *settings.Settings) error {
		s.StrataRoot, s.ConfigPath = in.Root, in.ConfigInUse
		return nil
	}); err != nil {
		return nil, err
	}
	d.stop(cur)
	next, err := d.prepare(in, nil, req.NoStart)
	if err != nil {
		return nil, err
	}
	s, _ = settings.LoadDefault()
	if s == nil {
		s = &settings.Settings{}
	}
	d.tracker.Update(func(st *controlapi.State) {
		st.Config, st.Vision = configState(in, nil, s)
		st.Server.Version, st.Server.Engine, st.Server.Model = "", "", ""
	})
	resp.Message = fmt.Sprintf("The service stopped Strata and is starting it with %s.", target)
	if req.NoStart {
		resp.Message = fmt.Sprintf("The service stopped Strata and runs %s from its next start.", target)
	}
	if carry != "" {
		resp.Message += " " + carry
	}
	d.publish(events.New(fmt.Sprintf("switched to %s", target),
		events.ConfigSwitchedDetails{Previous: prev, Running: target, StrataRoot: in.Root, Diff: resp.Diff}))
	seq := d.bus.Last()
	d.start(runCtx, next)
	if req.NoStart || cur.in == nil || cur.sup == nil {
		return resp, nil
	}
	// Nothing stays down that was up: the new model must get ready, else
	// the one that ran before is started again. The wait is under the
	// service's context: a caller that goes does not leave it half done.
	bound := d.startBound()
	_, ready, why := d.waitStart(runCtx, seq, bound)
	// The foreign-port notice's promise to start once the port is free is
	// not kept here: the previous model comes back instead.
	why, _, _ = strings.Cut(why, foreignPromise)
	if ready {
		resp.Message = fmt.Sprintf("The service stopped Strata and started it with %s; it is ready.", target)
		if carry != "" {
			resp.Message += " " + carry
		}
		return resp, nil
	}
	d.publish(events.New(fmt.Sprintf("%s did not start (%s): starting %s again", filepath.Base(target), why, filepath.Base(prev)), events.ServerProgressDetails{}))
	d.stop(next)
	if _, err := owner.Update(ctx, "the config in use", func(s *settings.Settings) error {
		s.StrataRoot, s.ConfigPath = cur.in.Root, prev
		return nil
	}); err != nil {
		d.logf("recording the previous config again: %v", err)
	}
	back, err := d.prepare(cur.in, nil, false)
	if err != nil {
		return nil, err
	}
	s, _ = settings.LoadDefault()
	if s == nil {
		s = &settings.Settings{}
	}
	d.tracker.Update(func(st *controlapi.State) { st.Config, st.Vision = configState(cur.in, nil, s) })
	seq = d.bus.Last()
	d.start(runCtx, back)
	d.publish(events.New(fmt.Sprintf("switched back to %s: %s did not start", prev, target),
		events.ConfigSwitchedDetails{Previous: target, Running: prev, StrataRoot: cur.in.Root, Failed: why}))
	_, ready, why2 := d.waitStart(runCtx, seq, bound)
	msg := fmt.Sprintf("The switch failed: %s did not start (%s). The service started %s again", filepath.Base(target), why, filepath.Base(prev))
	if ready {
		msg += "; it is ready."
	} else {
		msg += ", but it did not get ready either: " + why2
	}
	return nil, controlapi.Conflict(errors.New(msg))
}

// busy says whether the running Strata is answering a request now (its
// GET /status, which needs no key: {"busy": true} while a request runs).
func (d *Daemon) busy(ctx context.Context) bool {
	st := d.tracker.Snapshot()
	if st.Server.Phase != controlapi.PhaseReady || st.Server.Port == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(st.Server.Port)+"/status", nil)
	if err != nil {
		return false
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var s struct {
		Busy bool `json:"busy"`
	}
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&s) == nil && s.Busy
}
