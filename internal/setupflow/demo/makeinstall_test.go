package demo

import (
	"os"
	"testing"
)

// TestMakeInstallForManualRuns lays out a demo install at $STRATA_DEMO_ROOT
// (skipped unless set): `STRATA_DEMO_ROOT=/tmp/x go test -run ForManual ./internal/setupflow/demo`.
func TestMakeInstallForManualRuns(t *testing.T) {
	root := os.Getenv("STRATA_DEMO_ROOT")
	if root == "" {
		t.Skip("STRATA_DEMO_ROOT not set")
	}
	if _, err := MakeInstall(root); err != nil {
		t.Fatal(err)
	}
}
