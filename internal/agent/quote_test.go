package agent

import (
	"testing"

	"github.com/strata-companion/companion/internal/remotecmd"
)

// quoter quotes a command line for goos's shell as the relay does, failing
// t on an argument it refuses.
func quoter(t *testing.T, goos string) func(argv ...string) string {
	return func(argv ...string) string {
		t.Helper()
		s, err := remotecmd.Quote(goos, argv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}
