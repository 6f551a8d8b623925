package trayctl

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/app/traymodel"
	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/testenv"
)

// A PC that lends its GPU and runs no service: the tray shows lending from
// the account's view alone (no control API), follows a pairing and the
// code's expiry, gets a new code and stops lending through the elevated
// command, and says so.
func TestLendingWithoutAService(t *testing.T) {
	view := filepath.Join(t.TempDir(), "lending.json")
	write := func(s lendshown.Shown) {
		t.Helper()
		b, _ := json.Marshal(s)
		if err := os.WriteFile(view, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(lendshown.Shown{Name: "gpu-laptop", Code: "ABCD-EFGH", Expires: time.Now().Add(time.Hour)})

	v, notes := newRecView(), &countNotifier{}
	desk := &fakeDesktop{answer: true}
	ctl := New()
	ctl.View, ctl.Notifier, ctl.Desktop, ctl.Logf = v, notes, desk, t.Logf
	ctl.ReadLending = func() (*lendshown.Shown, error) { return lendshown.ReadFile(view) }
	ctl.Refresh = 20 * time.Millisecond
	ctl.Connect = func() (controlapi.Owner, error) {
		t.Error("a lending command asked the control API")
		return nil, controlapi.ErrNotRunning
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ctl.Run(ctx) }()
	w := &watch.Watcher{Connect: func() (*controlapi.Client, error) { return nil, controlapi.ErrNotRunning },
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	go func() { defer wg.Done(); w.Run(ctx, ctl.Update) }()
	defer func() { cancel(); wg.Wait() }()

	m := v.waitFor(t, "the lender's menu with its code", func(m traymodel.Menu) bool {
		return item(m, traymodel.ItemServer) == "Strata Companion: this PC lends its GPU as gpu-laptop" &&
			strings.HasPrefix(item(m, traymodel.ItemLendCode), "Lend this PC's GPU: pairing code ABCD-EFGH (until ")
	})
	if m.Icon != assets.TrayReady || m.Items[traymodel.ItemVisionCPU].Visible || m.Items[traymodel.ItemServerDetail].Visible ||
		!m.Items[traymodel.ItemLendStop].Enabled {
		t.Errorf("the lender's menu:\n%s", dump(m))
	}

	// The other PC pairs with the code: the lender writes the view, and the
	// tray, which looks again while the code is valid, lists it.
	write(lendshown.Shown{Name: "gpu-laptop", Code: "ABCD-EFGH", Expires: time.Now().Add(time.Hour), Paired: []string{"strata-pc"}})
	v.waitFor(t, "the paired PC", func(m traymodel.Menu) bool { return item(m, traymodel.ItemLendPaired) == "  Paired: strata-pc" })

	// The code runs out: the item offers a new one.
	write(lendshown.Shown{Name: "gpu-laptop", Code: "ABCD-EFGH", Expires: time.Now().Add(100 * time.Millisecond), Paired: []string{"strata-pc"}})
	v.waitFor(t, "Get a new pairing code", func(m traymodel.Menu) bool {
		return item(m, traymodel.ItemLendCode) == traymodel.NewCodeTitle && m.Items[traymodel.ItemLendCode].Enabled
	})

	// No administrator prompt can be shown: the notice says what to run.
	desk.mu.Lock()
	desk.onElevated = func([]string) error {
		return errors.New("no administrator prompt here (pkexec is not installed): run in a terminal: sudo strata-service lend code")
	}
	desk.mu.Unlock()
	ctl.Click(traymodel.ItemLendCode)
	testenv.WaitFor(t, 30*time.Second, "the notice that says to run it with sudo", func() bool {
		return strings.Join(notes.titles(), "|") == "Get a new pairing code: not done"
	})
	if n := notes.got[0]; !n.Urgent || !strings.Contains(n.Body, "sudo strata-service lend code") {
		t.Errorf("the notice: %+v", n)
	}

	// The prompt declined: nothing to tell.
	desk.mu.Lock()
	desk.onElevated = func([]string) error { return ErrDeclined }
	desk.mu.Unlock()
	ctl.Click(traymodel.ItemLendCode)
	testenv.WaitFor(t, 30*time.Second, "the declined command", func() bool { return len(desk.elevatedRuns()) == 2 })

	// A new code: the menu says it is being fetched, then shows it, and a
	// notice tells it (the menu is closed by then).
	release := make(chan struct{})
	desk.mu.Lock()
	desk.onElevated = func([]string) error {
		<-release
		write(lendshown.Shown{Name: "gpu-laptop", Code: "WXYZ-2345", Expires: time.Now().Add(10 * time.Minute), Paired: []string{"strata-pc"}})
		return nil
	}
	desk.mu.Unlock()
	ctl.Click(traymodel.ItemLendCode)
	m = v.waitFor(t, "the code being fetched", func(m traymodel.Menu) bool {
		return item(m, traymodel.ItemLendCode) == "Lend this PC's GPU: getting a new pairing code..."
	})
	if m.Items[traymodel.ItemLendCode].Enabled || m.Items[traymodel.ItemLendStop].Enabled {
		t.Errorf("lending's items are clickable while a command runs:\n%s", dump(m))
	}
	close(release)
	v.waitFor(t, "the new code", func(m traymodel.Menu) bool {
		return strings.HasPrefix(item(m, traymodel.ItemLendCode), "Lend this PC's GPU: pairing code WXYZ-2345 (until ")
	})
	testenv.WaitFor(t, 30*time.Second, "the new code's notice", func() bool { return len(notes.titles()) == 2 })
	if n := notes.got[1]; n.Title != "Pairing code WXYZ-2345" || !strings.Contains(n.Body, "works once, until") {
		t.Errorf("the new code's notice: %+v", n)
	}
	// A valid code is shown: a click on it asks for nothing.
	ctl.Click(traymodel.ItemLendCode)

	// Stop lending, declined in the dialog: nothing runs.
	desk.mu.Lock()
	desk.answer = false
	desk.onElevated = func([]string) error { os.Remove(view); return nil }
	desk.mu.Unlock()
	ctl.Click(traymodel.ItemLendStop)
	testenv.WaitFor(t, 30*time.Second, "the question", func() bool { desk.mu.Lock(); defer desk.mu.Unlock(); return len(desk.asked) == 1 })
	desk.mu.Lock()
	q := desk.asked[0]
	desk.answer = true
	desk.mu.Unlock()
	if !strings.HasPrefix(q, "Stop lending this PC's GPU? strata-pc can no longer read pictures here") {
		t.Errorf("the question: %q", q)
	}
	// Confirmed: lend stop runs, the lending rows go, and a notice says so.
	ctl.Click(traymodel.ItemLendStop)
	m = v.waitFor(t, "lending gone", func(m traymodel.Menu) bool { return !m.Items[traymodel.ItemLendStop].Visible })
	if item(m, traymodel.ItemServer) != "Strata Companion service not installed or not running" || m.Items[traymodel.ItemLendCode].Visible {
		t.Errorf("the menu after lend stop:\n%s", dump(m))
	}
	testenv.WaitFor(t, 30*time.Second, "the stop's notice", func() bool { return len(notes.titles()) == 3 })
	if got := notes.titles()[2]; got != "Stopped lending this PC's GPU" {
		t.Errorf("the stop's notice: %q", got)
	}
	if got, want := strings.Join(desk.elevatedRuns(), ", "), "lend code, lend code, lend code, lend stop"; got != want {
		t.Errorf("the elevated commands: %s, want %s", got, want)
	}
}
