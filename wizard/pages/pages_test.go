package pages_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
	"github.com/strata-companion/companion/wizard/pages"
)

type harness struct {
	mu     sync.Mutex
	queue  []func()
	t      *testing.T
	w      *demo.World
	win    fyne.Window
	ui     *pages.UI
	closed bool
}

func start(t *testing.T, w *demo.World, opts setupflow.Options) *harness {
	t.Helper()
	return startWith(t, w, nil, opts)
}

// startWith is start with the demo's adapters changed by edit first.
func startWith(t *testing.T, w *demo.World, edit func(*setupflow.Deps), opts setupflow.Options) *harness {
	t.Helper()
	a := test.NewApp()
	t.Cleanup(a.Quit)
	h := &harness{t: t, w: w}
	h.win = test.NewWindow(nil)
	h.win.Resize(fyne.NewSize(880, 700))
	var ui *pages.UI
	confirm := func(ctx context.Context, k setupflow.HostKey) bool { return ui.ConfirmHostKey(ctx, k) }
	d := w.Deps(confirm)
	if edit != nil {
		edit(&d)
	}
	f, err := setupflow.New(context.Background(), d, opts)
	if err != nil {
		t.Fatal(err)
	}
	ui = pages.NewWithDo(h.win, f, h.enqueue)
	ui.OnClose = func() { h.closed = true }
	h.ui = ui
	h.settle()
	return h
}

// enqueue is the UI's fyne.Do: the test's goroutine is the UI thread.
func (h *harness) enqueue(fn func()) {
	h.mu.Lock()
	h.queue = append(h.queue, fn)
	h.mu.Unlock()
}

func (h *harness) drain() bool {
	h.mu.Lock()
	q := h.queue
	h.queue = nil
	h.mu.Unlock()
	for _, fn := range q {
		fn()
	}
	return len(q) > 0
}

// settle runs queued UI work until no background work is left.
func (h *harness) settle() { h.settleUntil(func() bool { return false }) }

func (h *harness) settleUntil(cond func() bool) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		idle := h.ui == nil || h.ui.Running() == 0
		ran := h.drain()
		if cond() || (idle && !ran) {
			return
		}
		if !ran {
			time.Sleep(time.Millisecond)
		}
	}
	h.t.Fatal("the UI did not settle within 20 s")
}

// text is everything the window shows, as text.
func (h *harness) text() string {
	var b strings.Builder
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		if o == nil || !o.Visible() {
			return
		}
		switch w := o.(type) {
		case *widget.Label:
			b.WriteString(w.Text + "\n")
		case *canvas.Text:
			b.WriteString(w.Text + "\n")
		case *widget.Button:
			b.WriteString("[" + w.Text + "]\n")
		case *widget.Check:
			b.WriteString("[check " + w.Text + "]\n")
		case *widget.RadioGroup:
			b.WriteString("(" + strings.Join(w.Options, "|") + " sel=" + w.Selected + ")\n")
		case *widget.TextGrid:
			b.WriteString(w.Text() + "\n")
		case *widget.Card:
			b.WriteString(w.Title + "\n")
			walk(w.Content)
			return
		case *widget.Form:
			for _, it := range w.Items {
				b.WriteString(it.Text + ": ")
				walk(it.Widget)
			}
			return
		case *widget.Select:
			b.WriteString("<" + w.Selected + ">\n")
		}
		if c, ok := o.(*fyne.Container); ok {
			for _, ch := range c.Objects {
				walk(ch)
			}
			return
		}
		if wid, ok := o.(fyne.Widget); ok {
			if _, isLeaf := o.(*widget.Label); isLeaf {
				return
			}
			r := test.WidgetRenderer(wid)
			for _, ch := range r.Objects() {
				walk(ch)
			}
		}
	}
	walk(h.win.Content())
	for _, o := range h.win.Canvas().Overlays().List() {
		walk(o)
	}
	return b.String()
}

func (h *harness) must(sub ...string) {
	h.t.Helper()
	txt := h.text()
	for _, s := range sub {
		if !strings.Contains(txt, s) {
			h.t.Errorf("page %s does not show %q; it shows:\n%s", h.ui.Page(), s, txt)
		}
	}
}

func (h *harness) next(want setupflow.Page) {
	h.t.Helper()
	test.Tap(h.ui.NextButton())
	h.settle()
	if h.ui.Page() != want {
		h.t.Fatalf("Next went to %s (hint %q), want %s", h.ui.Page(), h.ui.Hint(), want)
	}
}

func (h *harness) key(k fyne.KeyName) {
	h.win.Canvas().(interface{ OnTypedKey() func(*fyne.KeyEvent) }).OnTypedKey()(&fyne.KeyEvent{Name: k})
	h.settle()
}

// toReviewOnCPU goes from the Welcome page to Review with this PC's CPU
// chosen.
func (h *harness) toReviewOnCPU() {
	h.next(setupflow.PageFindStrata)
	h.next(setupflow.PageThisPC)
	h.next(setupflow.PagePlacement)
	findRadio(h.win.Content(), "This PC's CPU").SetSelected("This PC's CPU")
	h.next(setupflow.PageReview)
}

// children are the objects the finders look through below o: a
// container's, a form's fields, a widget's rendered objects; a label has
// none.
func children(o fyne.CanvasObject) []fyne.CanvasObject {
	switch w := o.(type) {
	case *widget.Label:
		return nil
	case *widget.Form:
		var out []fyne.CanvasObject
		for _, it := range w.Items {
			out = append(out, it.Widget)
		}
		return out
	case *fyne.Container:
		return w.Objects
	case fyne.Widget:
		return test.WidgetRenderer(w).Objects()
	}
	return nil
}

// walk calls visit for o and, where visit says so, for what is below it.
func walk(o fyne.CanvasObject, visit func(fyne.CanvasObject) (descend bool)) {
	if visit(o) {
		for _, c := range children(o) {
			walk(c, visit)
		}
	}
}

// find is the first T at or below o that match accepts (nil when none).
func find[T fyne.CanvasObject](o fyne.CanvasObject, match func(T) bool) T {
	var found T
	done := false
	walk(o, func(c fyne.CanvasObject) bool {
		if done {
			return false
		}
		if w, ok := c.(T); ok && match(w) {
			found, done = w, true
			return false
		}
		return true
	})
	return found
}

func findRadio(o fyne.CanvasObject, prefix string) *widget.RadioGroup {
	return find(o, func(w *widget.RadioGroup) bool {
		return slices.ContainsFunc(w.Options, func(opt string) bool { return strings.HasPrefix(opt, prefix) })
	})
}

func findButton(o fyne.CanvasObject, text string) *widget.Button {
	return find(o, func(w *widget.Button) bool { return w.Text == text })
}

func findEntries(o fyne.CanvasObject, out *[]*widget.Entry) {
	walk(o, func(c fyne.CanvasObject) bool {
		switch w := c.(type) {
		case *widget.Entry:
			*out = append(*out, w)
			return false
		case *widget.SelectEntry:
			*out = append(*out, &w.Entry)
			return false
		}
		return true
	})
}

// Every page, through the "second PC" path, with the keyboard and the mouse.
func TestEveryPageSecondPC(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	h := start(t, w, setupflow.Options{})
	h.must("Welcome to Strata Companion", "Nothing is changed until you press Apply", "[Next]", "[Cancel]")
	if !h.ui.BackButton().Disabled() {
		t.Error("Back is enabled on the first page")
	}
	h.key(fyne.KeyReturn) // Enter = Next
	if h.ui.Page() != setupflow.PageFindStrata {
		t.Fatalf("Enter went to %s", h.ui.Page())
	}
	h.must("/opt/strata", "strata-old", "/opt/strata/strata-iq2_xs.json")
	// The broken install says what is missing and blocks Next.
	r := findRadio(h.win.Content(), "/opt/strata")
	r.SetSelected("/opt/strata-old  (cannot run yet)")
	h.settle()
	h.must("cannot run yet", "no Python venv")
	if !h.ui.NextButton().Disabled() {
		t.Error("Next is enabled on a broken install")
	}
	r.SetSelected("/opt/strata")
	h.next(setupflow.PageThisPC)
	h.must("NVIDIA GeForce RTX 4080", "16.0 GB total", "AMD Ryzen 7 7800X3D", "8 cores, 16 threads", "581.57")
	h.next(setupflow.PagePlacement)
	h.must("This PC's GPU (recommended)", "about 1.6 s per picture", "uses 1.4 GB of this GPU's VRAM",
		"This PC's CPU", "about 15 s per picture", "A second PC", "frees 1.4 GB of VRAM", "Off (text only)", "Recommended: This PC's GPU")
	if rg := findRadio(h.win.Content(), "This PC's GPU"); rg.Selected == "" {
		t.Error("the recommendation is not preselected")
	}
	// A trial on the second PC before one is paired says so.
	test.Tap(h.measureButton(2))
	h.settle()
	h.must("The trial picture failed: no second PC is paired yet")
	findRadio(h.win.Content(), "A second PC").SetSelected("A second PC")
	h.settle()
	if got := h.ui.Flow.Choice.Current().Placement; got != settings.PlacementRemote {
		t.Fatalf("choice %s", got)
	}
	if findRadio(h.win.Content(), "This PC's GPU").Selected != "" {
		t.Error("two placements selected at once")
	}
	h.next(setupflow.PageSecondPC)
	h.must("Address", "User", "Sign in with", "[Probe]", setupflow.TextWaits)
	if strings.Contains(strings.ToLower(h.text()), "text never waits") {
		t.Error("the second PC page still says that text never waits")
	}
	// Below the PCs found (and their code), the ssh way in: Tab reaches
	// its fields, the address first, then the user.
	var es []*widget.Entry
	findEntries(h.win.Content(), &es)
	ai := slices.IndexFunc(es, func(e *widget.Entry) bool { return strings.HasPrefix(e.PlaceHolder, "name or address") })
	if ai < 0 || ai+1 >= len(es) {
		t.Fatalf("no ssh address field among %d entries", len(es))
	}
	addr, user := es[ai], es[ai+1]
	isAddr := func() bool {
		f, ok := h.win.Canvas().Focused().(*widget.SelectEntry)
		return ok && &f.Entry == addr
	}
	for i := 0; i < 20 && !isAddr(); i++ {
		h.win.Canvas().FocusNext()
	}
	if !isAddr() {
		t.Fatalf("Tab does not reach the address (focused %T)", h.win.Canvas().Focused())
	}
	test.Type(h.win.Canvas().Focused(), "192.168.1.20")
	for i := 0; i < 3 && h.win.Canvas().Focused() != fyne.Focusable(user); i++ {
		h.win.Canvas().FocusNext()
	}
	test.Type(h.win.Canvas().Focused(), "sam")
	if addr.Text != "192.168.1.20" || user.Text != "sam" {
		t.Fatalf("typed %q %q", addr.Text, user.Text)
	}
	// Enter in a field probes.
	h.win.Canvas().Focused().TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	// The host key question: the fingerprint is shown, Trust answers it.
	h.settleUntil(h.ui.ModalOpen)
	h.must("Trust this PC?", demo.HostKey.Fingerprint)
	test.Tap(findButton(h.win.Canvas().Overlays().Top(), "Trust"))
	h.settle()
	h.must("windows / amd64", "NVIDIA GeForce RTX 3060 Laptop GPU", "5.7 GB", "0.9 ms", "112 MB/s up", "One picture")
	test.Tap(findButton(h.win.Content(), "Pair and prepare"))
	h.settle()
	h.must("Paired: the companion has its own key", "Prepared: the encoder started", "A trial picture on that PC")
	if strings.Contains(h.text(), "no second PC is paired yet") {
		t.Error("a trial's failure from before pairing is still shown")
	}
	// A trial picture there, through the PC paired in this run (not yet in the settings).
	test.Tap(findButton(h.win.Content(), "Measure here"))
	h.settle()
	h.must("2.6 s per picture, measured here · start 3.4 s", "[Measure again]")
	h.next(setupflow.PageReview)
	h.must("[Apply]", "+ ", "strata-vision-relay", "Service: strata-service will be installed", "Start the tray icon when I log in")
	if w.Login {
		t.Error("login item on")
	}
	h.next(setupflow.PageApply)
	h.must("ready: http://127.0.0.1:8080/v1", "Strata is ready")
	if !h.ui.BackButton().Disabled() {
		t.Error("Back enabled after Apply")
	}
	h.next(setupflow.PageDone)
	h.must("Strata Companion is set up.", "[Finish]")
	test.Tap(h.ui.NextButton())
	if !h.closed {
		t.Error("Finish did not close")
	}
	if w.Settings == nil || w.Settings.Vision != settings.PlacementRemote || w.Settings.LastMeasured(settings.PlacementRemote) == nil {
		t.Errorf("settings %+v", w.Settings)
	}
}

// Escape asks, and confirming closes with nothing changed, on each page.
func TestEscapeCancelsOnEveryPage(t *testing.T) {
	for _, p := range []setupflow.Page{setupflow.PageWelcome, setupflow.PageFindStrata, setupflow.PageThisPC, setupflow.PagePlacement, setupflow.PageReview} {
		t.Run(p.String(), func(t *testing.T) {
			w := demo.NewWorld("/opt/strata")
			h := start(t, w, setupflow.Options{})
			for h.ui.Page() != p {
				h.next(h.ui.Page() + 1 + map[bool]setupflow.Page{true: 1}[h.ui.Page() == setupflow.PagePlacement])
			}
			h.key(fyne.KeyEscape)
			h.must("Cancel setup", "Nothing on this PC has been changed")
			h.key(fyne.KeyEscape) // Escape again answers "keep going"
			if h.closed || h.ui.ModalOpen() {
				t.Fatal("the second Escape did not just close the question")
			}
			h.key(fyne.KeyEscape)
			test.Tap(findButton(h.win.Canvas().Overlays().Top(), "Cancel setup"))
			h.settle()
			if !h.closed {
				t.Fatal("not closed")
			}
			for _, c := range w.Calls() {
				if strings.HasPrefix(c, "write") || strings.HasPrefix(c, "install") || strings.HasPrefix(c, "settings-save") {
					t.Errorf("Cancel on %s after %s", p, c)
				}
			}
		})
	}
}

func TestBackReturns(t *testing.T) {
	h := start(t, demo.NewWorld("/opt/strata"), setupflow.Options{})
	h.next(setupflow.PageFindStrata)
	h.next(setupflow.PageThisPC)
	test.Tap(h.ui.BackButton())
	h.settle()
	if h.ui.Page() != setupflow.PageFindStrata {
		t.Fatalf("Back went to %s", h.ui.Page())
	}
	h.must("/opt/strata")
}

func TestApplyFailureShowsRollback(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Fail["follow"] = errors.New("the engine stopped while filling the expert cache")
	h := start(t, w, setupflow.Options{})
	h.toReviewOnCPU()
	h.next(setupflow.PageApply)
	h.must("Strata is not running with the new settings", "the engine stopped while filling", "Put back as it was", "Strata config", "Go Back to Review")
	if !h.ui.NextButton().Disabled() {
		t.Error("Next enabled after a failure")
	}
	test.Tap(h.ui.BackButton())
	h.settle()
	if h.ui.Page() != setupflow.PageReview {
		t.Errorf("Back went to %s", h.ui.Page())
	}
}

func TestAlreadyConfiguredAndStartPage(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Settings = &settings.Settings{StrataRoot: "/opt/strata", ConfigPath: w.Config, Vision: settings.PlacementCPU}
	h := start(t, w, setupflow.Options{})
	if h.ui.Page() != setupflow.PagePlacement {
		t.Fatalf("configured machine opened on %s", h.ui.Page())
	}
	if r := findRadio(h.win.Content(), "This PC's CPU"); r == nil || r.Selected == "" {
		t.Error("the current setting (CPU) is not selected")
	}
	h2 := start(t, w, setupflow.Options{StartPage: setupflow.PageSecondPC})
	if h2.ui.Page() != setupflow.PageSecondPC {
		t.Fatalf("--page remote opened %s", h2.ui.Page())
	}
	h2.must("[Probe]")
}

// Escape while applying asks, stops, puts things back and says so.
func TestCancelWhileApplying(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	h := start(t, w, setupflow.Options{})
	h.toReviewOnCPU()
	before := w.ConfigText
	w.HangAt = "follow" // Strata's start never ends
	test.Tap(h.ui.NextButton())
	h.settleUntil(func() bool { return strings.Contains(h.text(), "filling the GPU's expert cache") })
	h.win.Canvas().(interface{ OnTypedKey() func(*fyne.KeyEvent) }).OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyEscape})
	h.drain()
	h.must("Stop now? Everything setup changed so far will be put back")
	test.Tap(findButton(h.win.Canvas().Overlays().Top(), "Cancel setup"))
	h.settleUntil(h.ui.ModalOpen)
	h.must("Setup cancelled", "Put back as it was", "Strata config")
	test.Tap(findButton(h.win.Canvas().Overlays().Top(), "OK"))
	h.settle()
	if !h.closed {
		t.Error("not closed")
	}
	if w.ConfigText != before || w.Installed || w.Settings != nil {
		t.Errorf("after Cancel: installed %t settings %+v config changed %t", w.Installed, w.Settings, w.ConfigText != before)
	}
}

// Browse... opens a folder chooser over the Find Strata page.
func TestBrowseOpensAFolderChooser(t *testing.T) {
	h := start(t, demo.NewWorld("/opt/strata"), setupflow.Options{})
	h.next(setupflow.PageFindStrata)
	b := findButton(h.win.Content(), "Browse...")
	if b == nil {
		t.Fatal("no Browse... button on the Find Strata page")
	}
	if h.win.Canvas().Overlays().Top() != nil {
		t.Fatal("an overlay is open before Browse...")
	}
	test.Tap(b)
	if h.win.Canvas().Overlays().Top() == nil {
		t.Fatal("Browse... opened no folder chooser")
	}
}

func findCheck(o fyne.CanvasObject, prefix string) *widget.Check {
	return find(o, func(w *widget.Check) bool { return strings.HasPrefix(w.Text, prefix) })
}

// The Second PC page's idle stop, CPU fallback and Wake-on-LAN state: they
// start from the settings, a typed idle time and the checkbox reach the
// settings at Apply, a wrong idle time says why and changes nothing.
func TestSecondPCIdleStopFallbackAndWake(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	fb := false
	w.Settings = &settings.Settings{StrataRoot: "/opt/strata", ConfigPath: w.Config, Vision: settings.PlacementRemote, FallbackCPU: &fb,
		Remote: &settings.Remote{Host: "192.168.1.20", User: "sam", HostKey: "ssh-ed25519 AAAA", RemoteDir: `C:\sv`, IdleStopS: 300, MAC: "a8:a1:59:3c:27:e1"}}
	h := start(t, w, setupflow.Options{StartPage: setupflow.PageSecondPC})
	if h.ui.Page() != setupflow.PageSecondPC {
		t.Fatalf("opened %s", h.ui.Page())
	}
	h.must("When no pictures come, or that PC is off", "Stop its encoder after", "Waking that PC", "a8:a1:59:3c:27:e1", "[check Read pictures on this PC's CPU")
	var es []*widget.Entry
	findEntries(h.win.Content(), &es)
	idle := es[len(es)-1]
	if idle.Text != "5m" {
		t.Fatalf("idle stop shows %q, want 5m from the settings", idle.Text)
	}
	fallback := findCheck(h.win.Content(), "Read pictures on this PC's CPU")
	if fallback == nil || fallback.Checked {
		t.Fatalf("fallback check %+v", fallback)
	}
	idle.SetText("")
	test.Type(idle, "soon")
	h.settle()
	h.must("is not an idle time", "kept: 5m")
	if o := h.ui.Flow.SecondPC.Options(); o.IdleStopS != 300 {
		t.Errorf("a wrong idle time changed the choice: %+v", o)
	}
	idle.SetText("")
	test.Type(idle, "15m")
	test.Tap(fallback)
	h.settle()
	if o := h.ui.Flow.SecondPC.Options(); o.IdleStopS != 900 || !o.FallbackCPU {
		t.Fatalf("choices %+v", o)
	}
	h.next(setupflow.PageReview)
	h.must("stops after 15m without a picture", "this PC's CPU")
	h.next(setupflow.PageApply)
	if s := w.Settings; s.Remote == nil || s.Remote.IdleStopS != 900 || s.FallbackCPU == nil || !*s.FallbackCPU || s.Remote.MAC != "a8:a1:59:3c:27:e1" {
		t.Errorf("settings saved: %+v remote %+v", s, s.Remote)
	}
}

// An Apply that fails before Strata printed anything does not point at an
// empty log; one that fails after it does.
func TestApplyFailureBeforeStrataStarted(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	// As the service answers (text): the finder's message with its flags.
	w.Fail["write"] = errors.New("no Strata install to change: no Strata install found; looked in C:\\, Z:\\. Install Strata (github.com/Niko1221/Strata), or pass --strata-root DIR (the folder holding serve/server.py and engine/)")
	h := start(t, w, setupflow.Options{})
	h.toReviewOnCPU()
	h.next(setupflow.PageApply)
	h.must("Strata is not running with the new settings", "no Strata install to change", "printed nothing")
	if txt := h.text(); strings.Contains(txt, "--strata-root") || !strings.Contains(txt, "Browse...") {
		t.Errorf("a missing install in command-line words:\n%s", txt)
	}
	if txt := h.text(); strings.Contains(txt, "The log above") || strings.Contains(txt, "Strata's output") {
		t.Errorf("the failure points at an empty log:\n%s", txt)
	}
}

// The Review page's diff is wrapped, not in a sideways scroller: the mouse
// wheel over it scrolls the page, and no line is cut at the right.
func TestReviewDiffWraps(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	h := start(t, w, setupflow.Options{})
	h.toReviewOnCPU()
	var grids, hscrolls int
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch v := o.(type) {
		case *widget.TextGrid:
			grids++
			for _, l := range strings.Split(v.Text(), "\n") {
				if n := len([]rune(l)); n > pages.DiffColumns {
					t.Errorf("a diff line of %d characters (max %d): %q", n, pages.DiffColumns, l)
				}
			}
		case *container.Scroll:
			if v.Direction == container.ScrollHorizontalOnly || v.Direction == container.ScrollBoth {
				hscrolls++
			}
			walk(v.Content)
		case *fyne.Container:
			for _, c := range v.Objects {
				walk(c)
			}
		}
	}
	walk(h.win.Content())
	if grids == 0 {
		t.Fatalf("no diff on the Review page:\n%s", h.text())
	}
	if hscrolls > 0 {
		t.Errorf("%d sideways scrollers on the Review page", hscrolls)
	}
}
