package testenv

import (
	"regexp"
	"testing"
)

// The version is read from the module root's FyneApp.toml, from a test
// folder two levels below it.
func TestAppVersionFromFyneAppToml(t *testing.T) {
	if v := AppVersion(t); !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(v) {
		t.Fatalf("AppVersion = %q, want a version like 0.1.0", v)
	}
}
