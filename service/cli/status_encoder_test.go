package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/service/state"
)

// TestStatusAfterUnload: `status` after Strata's idle unload, from the
// events as the service folds them: the encoder is unloaded with the
// model, no VRAM line, no "Pictures:" line of the ended encoder; after
// vision off nothing says where the last encoder read.
func TestStatusAfterUnload(t *testing.T) {
	st := controlapi.State{Server: controlapi.ServerState{Phase: controlapi.PhaseReady, URL: "http://127.0.0.1:8080/v1"},
		Vision: controlapi.VisionState{Placement: "gpu", Encoder: controlapi.EncoderUnknown}}
	now := time.Now()
	for _, e := range []events.Event{
		events.New("", events.EncoderReadyDetails{RelayMark: events.RelayMark{Relay: 4242}, Device: "gpu", GPU: "RTX 5080", VRAMMiB: new(1383)}),
		events.New("", events.PictureEncodedDetails{RelayMark: events.RelayMark{Relay: 4242}, OK: new(true), Where: "local_cpu", MS: 1600}),
	} {
		e.Time = now
		state.Fold(&st, e)
	}
	print := func() string {
		var b bytes.Buffer
		printServiceStatus(&b, &serviceStatus{Running: true, State: &st})
		return b.String()
	}
	before := print()
	if !strings.Contains(before, "Encoder:    ready") || !strings.Contains(before, "(1383 MiB of VRAM)") {
		t.Fatalf("before the unload:\n%s", before)
	}
	state.Fold(&st, events.Event{Kind: events.ModelUnloaded, Time: now, Message: "the model was unloaded after 300 s idle"})
	after := print()
	t.Logf("status after the unload:\n%s", after)
	if !strings.Contains(after, "Encoder:    unloaded with the model at ") || !strings.Contains(after, "VRAM given back") {
		t.Errorf("after the unload the encoder line is wrong:\n%s", after)
	}
	if strings.Contains(after, "MiB of VRAM") || strings.Contains(after, "Pictures:") || strings.Contains(after, "4242") {
		t.Errorf("after the unload a line of the ended encoder stays:\n%s", after)
	}
	if !strings.Contains(after, "the next request loads it again") {
		t.Errorf("the server's line does not say the model is unloaded:\n%s", after)
	}

	st.Vision = controlapi.VisionState{Placement: "cpu", Encoder: controlapi.EncoderReady, Device: "cpu", LastPictureMS: 600}
	if !strings.Contains(print(), "Pictures:   this PC: its CPU") {
		t.Fatalf("with pictures on the CPU:\n%s", print())
	}
	changed := events.New("", events.ConfigChangedDetails{Placement: "off"})
	changed.Time = now
	state.Fold(&st, changed)
	if out := print(); strings.Contains(out, "Pictures:") || !strings.Contains(out, "Encoder:    off") {
		t.Errorf("after vision off:\n%s", out)
	}
}

// TestStatusSaysLazyWithVisionIsInvalid: `status` on a config with lazy
// loading and vision (which Strata refuses to start) says "Valid: no" with
// the reason and the fix, and `vision gpu --dry-run` no longer says
// "nothing to change": it turns lazy_load off, in the diff.
func TestStatusSaysLazyWithVisionIsInvalid(t *testing.T) {
	in := visionFixture(t)
	b, _ := os.ReadFile(in.Config)
	lazy := bytes.Replace(b, []byte("{"), []byte("{\n  \"lazy_load\": true,"), 1)
	if bytes.Contains(b, []byte(`"lazy_load"`)) {
		lazy = bytes.Replace(b, []byte(`"lazy_load": false`), []byte(`"lazy_load": true`), 1)
	}
	if err := os.WriteFile(in.Config, lazy, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := cli(t, "status", "--strata-root", in.Root)
	if code != 1 || !strings.Contains(out, "Valid:      no") || !strings.Contains(out, "lazy loading is text-only") || !strings.Contains(out, "turns lazy loading off") {
		t.Fatalf("status on a lazy config with vision: exit %d\n%s", code, out)
	}
	code, out, errs := cli(t, "vision", "gpu", "--dry-run", "--strata-root", in.Root, "--no-probe")
	if code != 0 || strings.Contains(out, "nothing to change") || !strings.Contains(out, `"lazy_load": false`) {
		t.Fatalf("vision gpu --dry-run on a lazy config: exit %d\n%s\n%s", code, out, errs)
	}
	if now, _ := os.ReadFile(in.Config); !bytes.Equal(now, lazy) {
		t.Fatal("a dry run wrote the config")
	}
}
