package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// ModuleRoot is the folder holding the module's go.mod, found from the
// test's folder upward.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

// AppVersion is the product's version as the module root's FyneApp.toml
// says it (the Makefile and the installer's build take it from there).
func AppVersion(t testing.TB) string {
	t.Helper()
	path := filepath.Join(ModuleRoot(t), "FyneApp.toml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*Version\s*=\s*"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no Version", path)
	}
	return string(m[1])
}
