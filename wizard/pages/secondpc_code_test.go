package pages_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

// recLenders records what the page asks of the lenders (the demo's).
type recLenders struct {
	setupflow.Lenders
	mu  sync.Mutex
	got []setupflow.CodePairing
}

func (r *recLenders) PairWithCode(ctx context.Context, p setupflow.CodePairing, progress func(setupflow.Progress)) (*settings.Remote, error) {
	r.mu.Lock()
	r.got = append(r.got, p)
	r.mu.Unlock()
	return r.Lenders.PairWithCode(ctx, p, progress)
}

func (r *recLenders) pairings() []setupflow.CodePairing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]setupflow.CodePairing(nil), r.got...)
}

// toSecondPC opens the Second PC page of a new machine, the lenders'
// calls recorded.
func toSecondPC(t *testing.T, w *demo.World) (*harness, *recLenders) {
	t.Helper()
	rec := &recLenders{}
	h := startWith(t, w, func(d *setupflow.Deps) { rec.Lenders = d.Lenders; d.Lenders = rec }, setupflow.Options{})
	h.next(setupflow.PageFindStrata)
	h.next(setupflow.PageThisPC)
	h.next(setupflow.PagePlacement)
	findRadio(h.win.Content(), "A second PC").SetSelected("A second PC")
	h.settle()
	h.next(setupflow.PageSecondPC)
	return h, rec
}

func codeEntry(h *harness, placeholder string) *widget.Entry {
	return find(h.win.Content(), func(e *widget.Entry) bool { return strings.HasPrefix(e.PlaceHolder, placeholder) })
}

// The PCs found on the network, each with its GPU and VRAM, the paired one
// said so.
func TestSecondPCListsThePCsFound(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Settings = &settings.Settings{StrataRoot: "/opt/strata", ConfigPath: w.Config, Vision: settings.PlacementRemote,
		Remote: &settings.Remote{Host: "192.168.1.20", User: "sam", HostKey: "ssh-ed25519 AAAA", RemoteDir: `C:\sv`}}
	h := start(t, w, setupflow.Options{StartPage: setupflow.PageSecondPC})
	h.must("PCs on this network that lend their GPU",
		"gaming-laptop: NVIDIA GeForce RTX 3060 Laptop GPU, 6.0 GB VRAM at 192.168.1.20, already paired",
		"office-pc: NVIDIA RTX A2000 12GB, 12.0 GB VRAM at 192.168.1.31",
		"Pairing code", "[Pair]", "[Look again]", "Or sign in to that PC with ssh")
	if !slices.Contains(w.Calls(), "find-lenders") {
		t.Errorf("no search: %q", w.Calls())
	}
	if txt := h.text(); strings.Contains(txt, "client isolation") {
		t.Error("the reasons for finding none are shown while PCs are found")
	}
	// The paired PC is picked; no address to type.
	if l := findRadio(h.win.Content(), "gaming-laptop"); !strings.HasPrefix(l.Selected, "gaming-laptop") {
		t.Errorf("picked %q", l.Selected)
	}
	if strings.Contains(h.text(), "Its address: ") {
		t.Error("the address field shows while a found PC is picked")
	}
	// Look again searches again.
	test.Tap(findButton(h.win.Content(), "Look again"))
	h.settle()
	n := 0
	for _, c := range w.Calls() {
		if c == "find-lenders" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("searched %d times", n)
	}
}

// Pick, code, Pair: PairWithCode gets that PC as announced and the code as
// parsed; the probe and the prepare follow, and Next leads to Review.
func TestSecondPCPairsByCode(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	h, rec := toSecondPC(t, w)
	l := findRadio(h.win.Content(), "office-pc")
	l.SetSelected(l.Options[1])
	test.Type(codeEntry(h, "the code that PC shows"), "hxk4 9tqm")
	test.Tap(findButton(h.win.Content(), "Pair"))
	h.settle()
	got := rec.pairings()
	want := pairing.CodeTarget{Name: "office-pc", Host: "192.168.1.31", PairPort: lend.DefaultPairPort, SSHPort: 22, HostKey: demo.Lenders[1].HostKey}
	if len(got) != 1 || got[0].Target != want || got[0].Code != demo.LendCode || got[0].StrataRoot != "/opt/strata" {
		t.Fatalf("PairWithCode got %+v, want %+v and %s", got, want, demo.LendCode)
	}
	h.must("Paired with office-pc (192.168.1.31) by its code", "Reached sam@192.168.1.31", "Prepared: the encoder started",
		"office-pc: NVIDIA RTX A2000 12GB, 12.0 GB VRAM at 192.168.1.31, already paired", "NVIDIA GeForce RTX 3060 Laptop GPU")
	if w.HostKeyAsked != 0 {
		t.Errorf("a host key question after a pairing by code (asked %d)", w.HostKeyAsked)
	}
	if _, paired, prepared := h.ui.Flow.SecondPC.State(); !paired || !prepared {
		t.Fatalf("paired %t prepared %t (hint %q)", paired, prepared, h.ui.Hint())
	}
	h.next(setupflow.PageReview)
	h.must("sam@192.168.1.31")
}

// A wrong code: the lender's refusal, in internal/lend's words (a new code
// on that PC); a text that is no code is not sent.
func TestSecondPCWrongCode(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	h, rec := toSecondPC(t, w)
	code := codeEntry(h, "the code that PC shows")
	test.Type(code, "ABCD-EFGH")
	test.Tap(findButton(h.win.Content(), "Pair"))
	h.settle()
	if !strings.HasPrefix(h.ui.Hint(), "Pick the PC in the list") || len(rec.pairings()) != 0 {
		t.Errorf("Pair with no PC picked: hint %q, %d pairings", h.ui.Hint(), len(rec.pairings()))
	}
	l := findRadio(h.win.Content(), "gaming-laptop")
	l.SetSelected(l.Options[0])
	test.Tap(findButton(h.win.Content(), "Pair"))
	h.settle()
	want := settings.UpperFirst((&lend.RefusedError{Kind: lend.RefusedWrong, TriesLeft: lend.MaxTries - 1}).Error())
	if h.ui.Hint() != want || !strings.Contains(want, "get a new code") {
		t.Errorf("hint %q, want %q", h.ui.Hint(), want)
	}
	h.must("Not paired")
	if _, paired, _ := h.ui.Flow.SecondPC.State(); paired || !h.ui.NextButton().Disabled() {
		t.Errorf("after a wrong code: paired %t, Next enabled %t", paired, !h.ui.NextButton().Disabled())
	}
	code.SetText("")
	test.Type(code, "ABC")
	test.Tap(findButton(h.win.Content(), "Pair"))
	h.settle()
	if !strings.HasPrefix(h.ui.Hint(), "Not a pairing code: it has 3 characters") {
		t.Errorf("hint %q", h.ui.Hint())
	}
	if n := len(rec.pairings()); n != 1 {
		t.Errorf("%d pairings asked, want the one with the wrong code", n)
	}
}

// None found: why a PC may not be found, and its address typed instead.
func TestSecondPCNoneFoundTypesTheAddress(t *testing.T) {
	w := demo.NewWorld("/opt/strata")
	w.Found = nil
	h, rec := toSecondPC(t, w)
	h.must("No PC on this network lends its GPU yet", "different networks", "client isolation", "treat the network as Public", "Private",
		"Not listed here: type its address", "Its address: ", "Pairing code", "Address", "[Probe]")
	if txt := h.text(); strings.Contains(txt, "--") {
		t.Errorf("command-line words on the page:\n%s", txt)
	}
	test.Type(codeEntry(h, "its name or IP address"), "192.168.1.40")
	test.Type(codeEntry(h, "the code that PC shows"), demo.LendCode.String())
	test.Tap(findButton(h.win.Content(), "Pair"))
	h.settle()
	got := rec.pairings()
	if want := (pairing.CodeTarget{Name: "192.168.1.40", Host: "192.168.1.40", PairPort: lend.DefaultPairPort}); len(got) != 1 || got[0].Target != want {
		t.Fatalf("PairWithCode got %+v, want %+v", got, want)
	}
	h.must("Paired with 192.168.1.40 by its code", "Prepared: the encoder started")
}
