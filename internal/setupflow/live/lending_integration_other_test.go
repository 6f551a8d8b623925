//go:build !windows

package live_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/lender"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/testenv"
)

// fakeService is a strata-service that plays lend: --foreground prints a
// step and runs until stop removes its record (here: until the file stop
// exists, as lend stop ends it); code fails when the file fail exists.
const fakeService = `#!/bin/sh
d=$(dirname "$0")
echo "$@" >> "$d/args"
case "$2" in
--foreground)
	echo "... installing the companion's agent for sam" >&2
	while [ ! -e "$d/stop" ]; do sleep 0.05; done ;;
code)
	if [ -e "$d/fail" ]; then echo "strata-service lend code: this PC is not lending its GPU: run strata-service lend first" >&2; exit 1; fi ;;
stop)
	touch "$d/stop"; echo "Stopped lending this PC's GPU." ;;
esac
`

// The lender through the real elevate (pkexec, here a stand-in that runs
// the program as it is): started, its step read back, stopped (and the
// one Start ran ends with it), a failing run's own words.
func TestLendingThroughPkexec(t *testing.T) {
	bin, out := t.TempDir(), t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("pkexec", "#!/bin/sh\nexec \"$@\"\n")
	write("strata-service", fakeService)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(func() { os.WriteFile(filepath.Join(bin, "stop"), nil, 0o644) }) // the stand-in lender ends

	shown := (*lender.Shown)(nil)
	l := &live.Lending{Exe: filepath.Join(bin, "strata-service"), Dir: out, User: "sam", Poll: 10 * time.Millisecond,
		Boot: func() time.Time { return time.Now().Add(-time.Hour) },
		Shown: func() (*lender.Shown, error) {
			if shown == nil {
				return nil, os.ErrNotExist
			}
			return shown, nil
		}}
	ctx := context.Background()
	if st := l.Status(); st.Lending || st.Lender != setupflow.LenderUnknown {
		t.Errorf("before Start: %+v", st)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the lender's first step", func() bool {
		st := l.Status()
		return st.Lender == setupflow.LenderRunning && st.Step == "installing the companion's agent for sam"
	})
	shown = &lender.Shown{Name: "gaming-laptop", Code: "HXK4-9TQM", Expires: time.Now().Add(time.Minute)}
	if st := l.Status(); !st.Lending || st.Code != "HXK4-9TQM" || st.Name != "gaming-laptop" {
		t.Errorf("the code shown: %+v", st)
	}
	if err := l.NewCode(ctx); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bin, "fail"), nil, 0o644)
	if err := l.NewCode(ctx); err == nil || err.Error() != "This PC is not lending its GPU: run strata-service lend first" {
		t.Errorf("a failing run: %v", err)
	}
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the lender Start ran to end with Stop", func() bool {
		st := l.Status()
		return st.Lender == setupflow.LenderEnded && st.Err == ""
	})
	b, _ := os.ReadFile(filepath.Join(bin, "args"))
	if want := "lend --foreground --user sam\nlend code --user sam\nlend code --user sam\nlend stop --user sam\n"; string(b) != want {
		t.Errorf("runs:\n%s\nwant\n%s", b, want)
	}
	// A log from before this PC restarted: that lender no longer runs.
	l.Boot = func() time.Time { return time.Now().Add(time.Hour) }
	if st := l.Status(); st.Lender != setupflow.LenderEnded {
		t.Errorf("after a restart: %+v", st)
	}
}

// Without pkexec, the way that works: sudo in a terminal (no --user).
func TestLendingWithoutPkexecSaysSudo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	l := &live.Lending{Exe: "/opt/strata-companion/strata-service", Dir: t.TempDir(), User: "sam"}
	err := l.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "run sudo strata-service lend --foreground (and keep it open)") || strings.Contains(err.Error(), "--user") {
		t.Errorf("without pkexec: %v", err)
	}
}
