package settings

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Measurement is one trial picture's figures for a placement, as measured
// on this PC (internal/measure): the wizard's Pictures page shows it, and
// the tray and `strata-service status` say "last measured" for the place
// pictures are read now. It is a record of what was seen, never a setting:
// nothing routes pictures by it.
type Measurement struct {
	// PictureS is one 1024x1024 picture, in seconds, as Strata waits for it.
	PictureS float64 `json:"picture_s"`
	// StartS is the encoder's start (a GPU's warm-up; the second PC's
	// connection and encoder start), paid once.
	StartS float64 `json:"start_s"`
	// When is the trial's date and time, RFC 3339 in UTC (Time reads it).
	When string `json:"when"`
	// StrataVersion is the installed engine's version ("" when unknown).
	StrataVersion string `json:"strata_version,omitempty"`
	// Device says where the picture was read ("this PC's CPU, 4 threads").
	Device string `json:"device,omitempty"`
	// Host is the second PC, for remote.
	Host   string `json:"host,omitempty"`
	Tokens int    `json:"tokens,omitempty"`

	// Extra holds the unknown keys of a "measured" entry (see Remote.Extra).
	Extra map[string]json.RawMessage `json:"-"`
}

func (m *Measurement) UnmarshalJSON(b []byte) error {
	type plain Measurement
	return decodeKeeping(b, (*plain)(m), &m.Extra)
}

func (m Measurement) MarshalJSON() ([]byte, error) {
	type plain Measurement
	return encodeKeeping(plain(m), m.Extra)
}

// Check refuses a record that cannot be a measurement (negative or absurd
// times, no date), so a bad write cannot put nonsense in the tray.
func (m Measurement) Check() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 24*3600 }
	switch {
	case bad(m.PictureS) || m.PictureS == 0:
		return fmt.Errorf("a measurement's picture_s must be above 0 and at most a day, not %v", m.PictureS)
	case bad(m.StartS):
		return fmt.Errorf("a measurement's start_s must be 0 to a day, not %v", m.StartS)
	case m.Time().IsZero():
		return fmt.Errorf("a measurement needs its date (when, RFC 3339), not %q", m.When)
	}
	return nil
}

// Summary is the short line for people: "14.2 s per picture, start 3.1 s
// (measured 5 Dec 2026, Strata 0.9.3)".
func (m Measurement) Summary() string {
	s := fmt.Sprintf("%s per picture, start %s (measured %s", Secs(m.PictureS), Secs(m.StartS), m.Time().Local().Format("2 Jan 2006"))
	if m.StrataVersion != "" {
		s += ", Strata " + m.StrataVersion
	}
	return s + ")"
}

// Secs says seconds for people: "0.41 s", "14.2 s", "111 s".
func Secs(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.2f s", v)
	case v < 100:
		return fmt.Sprintf("%.1f s", v)
	}
	return fmt.Sprintf("%.0f s", v)
}

// Time is When read (zero when it is not RFC 3339).
func (m Measurement) Time() time.Time {
	t, err := time.Parse(time.RFC3339, m.When)
	if err != nil {
		return time.Time{}
	}
	return t
}

// WhenString is t as Measurement.When keeps it.
func WhenString(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// Measured is the last trial picture per placement.
type Measured struct {
	GPU    *Measurement `json:"gpu,omitempty"`
	CPU    *Measurement `json:"cpu,omitempty"`
	Remote *Measurement `json:"remote,omitempty"`

	// Extra holds the unknown keys of "measured" (see Remote.Extra).
	Extra map[string]json.RawMessage `json:"-"`
}

func (m *Measured) UnmarshalJSON(b []byte) error {
	type plain Measured
	return decodeKeeping(b, (*plain)(m), &m.Extra)
}

func (m Measured) MarshalJSON() ([]byte, error) {
	type plain Measured
	return encodeKeeping(plain(m), m.Extra)
}

// slot is p's record in m (nil for off or an unknown placement).
func (m *Measured) slot(p Placement) **Measurement {
	switch p {
	case PlacementGPU:
		return &m.GPU
	case PlacementCPU:
		return &m.CPU
	case PlacementRemote:
		return &m.Remote
	}
	return nil
}

// LastMeasured is the measurement for p (nil when none was made).
func (s *Settings) LastMeasured(p Placement) *Measurement {
	if s == nil || s.Measured == nil {
		return nil
	}
	if sl := s.Measured.slot(p); sl != nil {
		return *sl
	}
	return nil
}

// SetMeasured keeps m as p's last measurement; false for a placement that
// has none (off, unknown).
func (s *Settings) SetMeasured(p Placement, m Measurement) bool {
	if s.Measured == nil {
		s.Measured = &Measured{}
	}
	sl := s.Measured.slot(p)
	if sl == nil {
		return false
	}
	if old := *sl; old != nil && m.Extra == nil {
		m.Extra = old.Extra
	}
	*sl = &m
	return true
}

// PictureFigure is the time per picture people are shown for a place: the
// last trial picture measured there once there is one, else the estimate.
type PictureFigure struct {
	Seconds float64 // 0: unknown
	// Measured is the trial it comes from; nil: Seconds is the estimate.
	Measured *Measurement
}

// ShownPicture decides which time per picture people read for a place, the
// one rule for the wizard, the terminal setup, the probe and the demo: once
// a trial picture was measured there (m), its figure replaces the estimate.
func ShownPicture(estimate float64, m *Measurement) PictureFigure {
	if m != nil && m.PictureS > 0 {
		return PictureFigure{Seconds: m.PictureS, Measured: m}
	}
	if estimate > 0 {
		return PictureFigure{Seconds: estimate}
	}
	return PictureFigure{}
}

// Words: "0.78 s per picture, measured here" or "about 111 s per picture";
// "" when the time is unknown.
func (f PictureFigure) Words() string {
	switch {
	case f.Seconds <= 0:
		return ""
	case f.Measured != nil:
		return Secs(f.Seconds) + " per picture, measured here"
	}
	return "about " + RoughSecs(f.Seconds) + " per picture"
}

// Short is the figure beside a bar: "0.78 s (measured)", "111 s (estimate)".
func (f PictureFigure) Short() string {
	if f.Measured != nil {
		return Secs(f.Seconds) + " (measured)"
	}
	return RoughSecs(f.Seconds) + " (estimate)"
}

// RoughSecs says an estimated time for people: "1.6 s", "0.8 s", and whole
// seconds from 10 s on ("111 s"); an estimate claims no more.
func RoughSecs(s float64) string {
	if s >= 9.95 { // 9.96 is "10 s", not "10.0 s"
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}
