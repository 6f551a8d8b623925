package settings

import "testing"

// Issue 40: the one rule for the time per picture people read: a measured
// figure replaces the estimate; with none, the estimate, said as one.
func TestShownPicture(t *testing.T) {
	m := &Measurement{PictureS: 0.78, StartS: 0.4, When: "2026-12-05T10:30:00Z"}
	for _, c := range []struct {
		est          float64
		m            *Measurement
		words, short string
	}{
		{111.5, m, "0.78 s per picture, measured here", "0.78 s (measured)"},
		{111.5, nil, "about 112 s per picture", "112 s (estimate)"},
		{1.63, &Measurement{}, "about 1.6 s per picture", "1.6 s (estimate)"},
		{0, nil, "", "0.0 s (estimate)"},
	} {
		f := ShownPicture(c.est, c.m)
		if f.Words() != c.words || (c.words != "" && f.Short() != c.short) {
			t.Errorf("ShownPicture(%v, %+v) = %q / %q, want %q / %q", c.est, c.m, f.Words(), f.Short(), c.words, c.short)
		}
	}
}
