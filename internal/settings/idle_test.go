package settings

import "testing"

func TestIdleStop(t *testing.T) {
	for in, want := range map[string]int{"off": 0, "0": 0, "600": 600, "10m": 600, "1h30m": 5400, " 45S ": 45, "168h": MaxIdleStopS} {
		got, err := ParseIdleStop(in)
		if err != nil || got != want {
			t.Errorf("ParseIdleStop(%q) = %d, %v; want %d", in, got, err, want)
		}
		if back, err := ParseIdleStop(FormatIdleStop(got)); err != nil || back != got {
			t.Errorf("FormatIdleStop(%d) = %q reads back as %d, %v", got, FormatIdleStop(got), back, err)
		}
	}
	for _, bad := range []string{"", "soon", "-5", "1.5s", "169h", "500ms"} {
		if _, err := ParseIdleStop(bad); err == nil {
			t.Errorf("ParseIdleStop(%q) passed", bad)
		}
	}
	for secs, want := range map[int]string{0: "off", 600: "10m", 45: "45s", 40: "40s", 7200: "2h", 3610: "1h10s", 3600: "1h", 5400: "1h30m", 3661: "1h1m1s"} {
		if got := FormatIdleStop(secs); got != want {
			t.Errorf("FormatIdleStop(%d) = %q, want %q", secs, got, want)
		}
	}
}
