package settings

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxIdleStopS bounds Remote.IdleStopS, the idle stop of the second PC's encoder (a week;
// longer is the same as off).
const MaxIdleStopS = 7 * 24 * 3600

// ParseIdleStop reads an idle stop as a person types it: "off" (or 0),
// whole seconds ("600"), or a duration ("10m", "1h30m"); empty is an error
// (a field being retyped must not mean "off"). The CLI's
// `remote idle-stop` and the wizard's field both use it.
func ParseIdleStop(s string) (int, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "off" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.Atoi(s); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || d < time.Second || d > MaxIdleStopS*time.Second || d%time.Second != 0 {
		return 0, fmt.Errorf("%q is not an idle time: give whole seconds from 1 to %d, a duration such as 10m, or off", s, MaxIdleStopS)
	}
	return int(d / time.Second), nil
}

// FormatIdleStop is the idle stop for a person: "off", "45s", "10m", "1h30m".
func FormatIdleStop(secs int) string {
	if secs <= 0 {
		return "off"
	}
	h, m, sec := secs/3600, secs%3600/60, secs%60
	var b strings.Builder
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if sec > 0 {
		fmt.Fprintf(&b, "%ds", sec)
	}
	return b.String()
}
