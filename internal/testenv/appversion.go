package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// AppVersion is the product's version as FyneApp.toml says it (the Makefile
// and the installer's build take it from there), the file found from the
// test's folder upward.
func AppVersion(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "FyneApp.toml"))
		if err == nil {
			m := regexp.MustCompile(`(?m)^\s*Version\s*=\s*"([^"]+)"`).FindSubmatch(b)
			if m == nil {
				t.Fatalf("%s has no Version", filepath.Join(dir, "FyneApp.toml"))
			}
			return string(m[1])
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no FyneApp.toml above the test's folder")
		}
		dir = up
	}
}
