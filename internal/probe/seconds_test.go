package probe

import (
	"strings"
	"testing"
)

// One figure, one way of writing it: the reasons round as the options under
// them do (whole seconds from 10 s on), never "111.5 s" above "111 s".
func TestSecondsOneWay(t *testing.T) {
	for s, want := range map[float64]string{1.63: "1.6 s", 0.84: "0.8 s", 9.96: "10 s", 15.27: "15 s", 111.5: "112 s", 111.4: "111 s"} {
		if got := Seconds(s); got != want {
			t.Errorf("Seconds(%v) = %q, want %q", s, got, want)
		}
	}
	rec := Recommend(&Report{OS: "windows", GPUs: []GPU{}, CPU: CPU{Threads: 2, Cores: 2}}, nil)
	found := false
	for _, e := range rec.Estimates {
		if e.Placement == "cpu" && e.Available {
			found = true
			if !strings.Contains(rec.Reason, "about "+Seconds(e.PictureSeconds)) {
				t.Errorf("the reason %q does not say the CPU's %s", rec.Reason, Seconds(e.PictureSeconds))
			}
		}
	}
	if !found {
		t.Fatalf("no CPU estimate: %+v", rec)
	}
}
