package cli

import (
	"bytes"
	"testing"
)

// Issue 40: the Service line names the service manager only for a service
// it runs, in words ("systemd"); a `strata-service run` is not one of its
// services, so "(unix-systemv)" there is noise.
func TestServiceLineNamesTheManagerOnlyForItsService(t *testing.T) {
	for _, c := range []struct {
		ss   serviceStatus
		want string
	}{
		{serviceStatus{Running: true, Manager: "unix-systemv"}, "Service:    running (not as an OS service: `strata-service run`)\n"},
		{serviceStatus{Manager: "unix-systemv"}, "Service:    not installed\n"},
		{serviceStatus{Installed: true, Running: true, Manager: "linux-systemd"}, "Service:    installed, running (systemd)\n"},
		{serviceStatus{Installed: true, Manager: "windows-service"}, "Service:    installed, stopped (Windows services)\n"},
	} {
		var b bytes.Buffer
		printServiceStatus(&b, &c.ss)
		if b.String() != c.want {
			t.Errorf("%+v: %q, want %q", c.ss, b.String(), c.want)
		}
	}
}
