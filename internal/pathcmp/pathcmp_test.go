package pathcmp

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestSame(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(wd, "strata-a.json")
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"", ".", false}, // unset is not the working directory
		{cfg, "", false},
		{cfg, cfg, true},
		{cfg, "strata-a.json", true}, // relative to the working directory
		{cfg, filepath.Join(wd, "x", "..", "strata-a.json"), true}, // cleaned
		{cfg, filepath.Join(wd, "strata-b.json"), false},           // another file
		{filepath.Join(wd, "root") + string(filepath.Separator), filepath.Join(wd, "root"), true},
		{cfg, strings.ToUpper(cfg), runtime.GOOS == "windows" || cfg == strings.ToUpper(cfg)}, // case: Windows only
	} {
		if got := Same(c.a, c.b); got != c.want {
			t.Errorf("Same(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Same(c.b, c.a); got != c.want {
			t.Errorf("Same(%q, %q) = %v, want %v (not symmetric)", c.b, c.a, got, c.want)
		}
	}
}
