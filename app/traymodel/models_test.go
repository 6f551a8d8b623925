package traymodel

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
)

func readyState() *controlapi.State {
	return &controlapi.State{
		Server: controlapi.ServerState{Phase: controlapi.PhaseReady, Model: "strata-iq2_xs", Version: "0.1.44", Since: time.Now()},
		Vision: controlapi.VisionState{Placement: "cpu", Encoder: controlapi.EncoderReady},
		Config: controlapi.ConfigInfo{StrataRoot: "/s", Path: "/s/strata-iq2_xs.json", Valid: true},
	}
}

// The Model submenu: one slot per config, the running one checked, one
// that cannot run disabled with why, unused slots hidden; the server line
// names the running Strata's version; the repair item shows only for a
// rewritten config; Update Strata only with an install.
func TestModelsUpdateRepairAndVersion(t *testing.T) {
	st := readyState()
	in := Input{Now: time.Now(), State: st, Reach: Connected, Configs: &controlapi.ConfigList{StrataRoot: "/s", Running: st.Config.Path, Configs: []controlapi.ConfigEntry{
		{Path: "/s/strata-coder.json", Tag: "coder", Ready: true},
		{Path: st.Config.Path, Tag: "iq2_xs", ModelName: "Qwen IQ2_XS", Ready: true, Running: true},
		{Path: "/s/strata-iq3_s.json", Tag: "iq3_s", Problem: "the model file x does not exist"},
	}}}
	m := Build(in)
	if it := m.Items[ItemModel]; it.Title != "Model: iq2_xs" || !it.Visible {
		t.Errorf("parent %+v", it)
	}
	if it := m.Items[ItemModel0]; it.Title != "coder" || !it.Enabled || it.Checked {
		t.Errorf("slot 0 %+v", it)
	}
	if it := m.Items[ItemModel1]; it.Title != "iq2_xs (Qwen IQ2_XS)" || !it.Checked {
		t.Errorf("slot 1 %+v", it)
	}
	if it := m.Items[ItemModel2]; it.Enabled || !strings.Contains(it.Title, "not ready: the model file") {
		t.Errorf("slot 2 %+v", it)
	}
	for id := ItemModel3; id <= ItemModel7; id++ {
		if m.Items[id].Visible {
			t.Errorf("unused slot %d shows: %+v", id, m.Items[id])
		}
	}
	if !strings.Contains(m.Items[ItemServer].Title, "Strata 0.1.44") {
		t.Errorf("server line %q", m.Items[ItemServer].Title)
	}
	if m.Items[ItemRepair].Visible || !m.Items[ItemUpdate].Visible || !m.Items[ItemUpdate].Enabled {
		t.Errorf("repair %+v update %+v", m.Items[ItemRepair], m.Items[ItemUpdate])
	}
	st.Config.Rewritten = []string{"the relay was replaced by engine/strata-vision"}
	in.UpdateLine = "[ok] engine 0.1.45 installed"
	m = Build(in)
	if it := m.Items[ItemRepair]; !it.Visible || !strings.Contains(it.Title, "Put pictures back on the CPU") {
		t.Errorf("repair %+v", it)
	}
	// Issue 34: one repair covers every finding (keys too), not only pictures.
	st.Config.Rewritten = []string{"api_key was dropped (Strata now answers without a key)", "host went from localhost to 127.0.0.1 (other PCs on the network no longer reach Strata)",
		"port went from 18080 to 8080 (clients set to 18080 will not find Strata after its next start)", "the relay was replaced by engine/strata-vision: pictures are read on this PC's CPU"}
	m = Build(in)
	if it := m.Items[ItemRepair]; !it.Visible || it.Title != "Put back what Strata's setup changed: key, host, port, pictures" {
		t.Errorf("one repair for all findings: %+v", it)
	}
	if m.Items[ItemUpdate].Enabled || m.Items[ItemProgress].Title != "Updating Strata: [ok] engine 0.1.45 installed" {
		t.Errorf("while updating: %+v %+v", m.Items[ItemUpdate], m.Items[ItemProgress])
	}
	// Starting: the other models wait, the running one stays ticked.
	st.Server.Phase = controlapi.PhaseStarting
	m = Build(in)
	if it := m.Items[ItemModel0]; it.Enabled || !strings.Contains(it.Title, "wait until Strata is ready") {
		t.Errorf("slot 0 while starting %+v", it)
	}
	// No service: no Model submenu.
	m = Build(Input{Reach: NotRunning, Configs: in.Configs})
	if m.Items[ItemModel].Visible || m.Items[ItemModel0].Visible || m.Items[ItemUpdate].Visible {
		t.Error("model items show without a service")
	}
	if d := DecideModel(readyState(), "coder", false, time.Now()); !d.Confirm || !strings.Contains(d.Question, "Switching the model to coder restarts Strata") {
		t.Errorf("DecideModel %+v", d)
	}
}
