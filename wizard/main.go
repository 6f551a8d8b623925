// Command strata-setup is the first-run setup wizard of Strata Companion: a
// thin fyne window over the setupflow state machine (internal/setupflow),
// with the pages in wizard/pages and the real adapters in
// internal/setupflow/live. Only this file imports fyne's app (and so GLFW).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/autostart"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/live"
	"github.com/strata-companion/companion/internal/version"
	"github.com/strata-companion/companion/wizard/pages"
)

func main() {
	fs := flag.NewFlagSet("strata-setup", flag.ExitOnError)
	page := fs.String("page", "", "open at this page: welcome, strata, this-pc, placement, remote, or lend (lend this PC's GPU to another PC)")
	root := fs.String("strata-root", "", "the Strata install folder (the one holding serve/ and engine/)")
	cfg := fs.String("config", "", "the Strata config file (strata-<tag>.json) to use")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "strata-setup %s: the Strata Companion setup wizard.\n\nUsage: strata-setup [--page NAME] [--strata-root DIR] [--config FILE]\n\nFlags:\n", version.Version)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nOn a machine without a display use \"strata-service setup --cli\".\n")
	}
	fs.Parse(os.Args[1:])
	var opts setupflow.Options
	lendView := *page == "lend" // a view of its own, over the Welcome page
	if *page != "" && !lendView {
		p, err := setupflow.ParsePage(*page)
		if err != nil {
			fmt.Fprintln(os.Stderr, "strata-setup:", err)
			os.Exit(2)
		}
		opts.StartPage = p
	}

	a := app.NewWithID("io.github.strata-companion.companion")
	// fyne's theme with detail text readable in both variants (WCAG AA).
	a.Settings().SetTheme(pages.Theme())
	// The app's icon on the window and the taskbar in every build (only
	// `fyne package` builds get it from FyneApp.toml by themselves).
	icon := fyne.NewStaticResource("app.png", assets.PNG("app"))
	a.SetIcon(icon)
	w := a.NewWindow("Strata Companion setup")
	w.SetIcon(icon)
	// 880x700 where it fits; on a small screen or at 150 % the work area
	// (screen less taskbar, in pixels) over the scale, so the steps, the
	// title and the buttons are never off the screen.
	w.Resize(pages.FitSize(fyne.NewSize(880, 700), workArea(), scale()))
	w.CenterOnScreen()

	var ui *pages.UI
	confirm := func(ctx context.Context, k setupflow.HostKey) bool { return ui.ConfirmHostKey(ctx, k) }
	deps, isDemo := depsFor(*root, *cfg, confirm)
	flow, err := setupflow.New(context.Background(), deps, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata-setup:", err)
		os.Exit(1)
	}
	ui = pages.New(w, flow)
	if lendView {
		ui.ShowLending()
	}
	ui.OnClose = func() { w.Close() }
	w.SetCloseIntercept(func() {
		if flow.Busy() == "apply" {
			ui.Cancel() // asks, and puts things back
			return
		}
		ui.Close()
		w.Close()
	})
	if isDemo && os.Getenv("STRATA_SETUP_AUTOPILOT") == "1" {
		// Screenshots: print "shot NAME", wait for a line on stdin.
		in := bufio.NewReader(os.Stdin)
		a.Lifecycle().SetOnStarted(func() {
			ui.Autopilot(func(name string) {
				time.Sleep(400 * time.Millisecond) // let the frame paint
				fmt.Printf("shot %s\n", name)
				in.ReadString('\n')
			}, demoLendCode())
		})
	}
	w.ShowAndRun()
}

// depsFor returns the real adapters, or the canned demo machine in a
// build with the demo tag (screenshots; see demo.go).
func depsFor(root, cfg string, confirm setupflow.ConfirmHostKey) (setupflow.Deps, bool) {
	if d, ok := demoDeps(confirm); ok {
		return d, true
	}
	tray := autostart.Entry{}
	if self, err := os.Executable(); err == nil {
		tray.Exe = filepath.Join(filepath.Dir(self), "strata-tray"+filepath.Ext(self))
	}
	return live.Deps(live.Options{StrataRoot: root, ConfigPath: cfg, Login: loginItem{tray}, Confirm: confirm}), false
}

// loginItem adapts the tray's autostart entry.
type loginItem struct{ a autostart.Entry }

func (l loginItem) Enabled() bool            { on, _ := l.a.Enabled(); return on }
func (l loginItem) SetEnabled(on bool) error { return l.a.Set(on) }
