package traymodel

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
)

// Issue 34: the repair's dialog says what changes (the service's dry run
// in words) and names a request Strata is answering; a failure line fits.
func TestRepairDialogSaysWhatAndNamesARequest(t *testing.T) {
	now := time.Now()
	st := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady}}
	d := DecideRepair(st, []string{"port back to 18080 (Strata's setup set 8080)", "api_key put back"}, true, now)
	for _, want := range []string{"port back to 18080", "api_key put back", "answering a request now", "1-3 minutes"} {
		if !d.Confirm || !strings.Contains(d.Question, want) {
			t.Errorf("the question lacks %q: %q", want, d.Question)
		}
	}
	if d := DecideRepair(st, nil, false, now); strings.Contains(d.Question, "answering a request") {
		t.Errorf("no request named when none runs: %q", d.Question)
	}
	in := Input{State: st, Reach: Connected, Pending: &Pending{Action: "update", Started: now, Err: strings.Repeat("Strata's setup said something long ", 20)}}
	if line := progressLine(in); len([]rune(line)) > 100 {
		t.Errorf("a failure line of %d characters: %q", len([]rune(line)), line)
	}
}

// Issue 34: a Strata the service did not start is named, and Start Strata
// is not offered into its port.
func TestAForeignStrataIsNamed(t *testing.T) {
	st := &controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseStopped,
		Foreign: &controlapi.ForeignServer{Port: 8080, PID: 4242, Cmdline: `C:\Strata\.venv\Scripts\python.exe serve/server.py --config strata-iq2_xs.json`}}}
	st.Config = controlapi.ConfigInfo{StrataRoot: `C:\Strata`, Path: `C:\Strata\strata-iq2_xs.json`, Valid: true}
	m := Build(Input{State: st, Reach: Connected})
	var all []string
	for _, it := range m.Items {
		all = append(all, it.Title)
	}
	text := strings.Join(all, "\n")
	if !strings.Contains(text, "Port 8080 held by python.exe (process 4242), not by the service: close it") {
		t.Errorf("the foreign Strata is not named:\n%s", text)
	}
	if it := m.Items[ItemRestart]; it.Enabled {
		t.Errorf("Start Strata is offered into a held port: %+v", it)
	}
}
