package termsetup

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

// runDemo runs the terminal wizard over a demo world with input as the
// answers; it returns what Run printed and returned.
func runDemo(t *testing.T, w *demo.World, input string, o Options) (string, error) {
	t.Helper()
	var out bytes.Buffer
	o.In, o.Out = strings.NewReader(input), &out
	err := Run(context.Background(), w.Deps, o)
	return out.String(), err
}

func TestSetupCLISecondPC(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	// Enter, install 1, placement 3 (second PC), address, user, no password,
	// trust the key, pair, idle stop "soon" (refused) then 15m, CPU fallback
	// yes, tray no, apply yes.
	in := "\n1\n3\n192.168.1.20\nsam\nn\nyes\ny\nsoon\n15m\ny\nn\ny\n"
	out, err := runDemo(t, w, in, Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, s := range []string{"NVIDIA GeForce RTX 4080", "about 1.6 s per picture", demo.HostKey.Fingerprint,
		"RTX 3060 Laptop GPU", "round trip 0.9 ms", "strata-vision-relay", "| ready: http://127.0.0.1:8080/v1", "== Done ==",
		"Waking that PC: Possible", demo.DemoMAC, `"soon" is not an idle time`, "stops after 15m without a picture"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if w.Settings == nil || w.Settings.Vision != settings.PlacementRemote || !slices.Contains(w.Calls(), "start restart=false") {
		t.Fatalf("settings %+v calls %v", w.Settings, w.Calls())
	}
	if r := w.Settings.Remote; r == nil || r.IdleStopS != 900 || w.Settings.FallbackCPU == nil || !*w.Settings.FallbackCPU {
		t.Errorf("second-PC options saved: %+v fallback %v", r, w.Settings.FallbackCPU)
	}
}

func TestSetupCLIYesTakesDefaults(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	out, err := runDemo(t, w, "", Options{Yes: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if w.Settings.Vision != settings.PlacementGPU || w.Login {
		t.Errorf("--yes chose %s, login %t", w.Settings.Vision, w.Login)
	}
}

func TestSetupCLICancelAtReviewChangesNothing(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	before := w.ConfigText
	out, err := runDemo(t, w, "\n1\n2\ny\nq\n", Options{})
	if !errors.Is(err, setupflow.ErrCancelled) || !strings.Contains(out, "Nothing on this PC was changed") {
		t.Fatalf("%v\n%s", err, out)
	}
	if w.ConfigText != before || w.Settings != nil || w.Installed {
		t.Error("Cancel at Review changed something")
	}
}

func TestSetupCLIBack(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	// Welcome, install 1, then "b" at placement goes back to This PC, whose
	// answer-free page moves on again; choose the CPU; cancel at review.
	out, err := runDemo(t, w, "\n1\nb\n2\nn\nn\n", Options{})
	if !errors.Is(err, setupflow.ErrCancelled) || strings.Count(out, "== This PC ==") != 2 {
		t.Errorf("%v\n%s", err, out)
	}
}
