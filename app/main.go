// Command strata-tray is the tray icon of Strata Companion: it shows what the
// Strata server and its image encoder are doing and offers a small menu. It
// talks only to strata-service's control API and holds no state of its own
// that the service does not have. See docs/tray.md.
//
// The pieces: traymodel (the menu, icon, tooltip and notification rules as
// pure functions of the service's state), watch (follows the control API's
// event stream), trayctl (the controller: one goroutine that owns what the
// tray knows and to which everything else posts work), desktop
// (notifications, dialogs, autostart, the single-instance lock, per
// platform), and this package, which copies menus onto getlantern/systray.
//
// The Go runtime's 10 s re-read of the cgroup CPU limit (to adjust
// GOMAXPROCS) was most of an idle tray's wake-ups; a tray needs no such
// adjustment (bench/idle).
//
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/getlantern/systray"

	"github.com/strata-companion/companion/app/desktop"
	"github.com/strata-companion/companion/app/trayctl"
	"github.com/strata-companion/companion/app/traymodel"
	"github.com/strata-companion/companion/app/watch"
	"github.com/strata-companion/companion/assets"
	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/probe"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/version"
)

func main() {
	fs := flag.NewFlagSet("strata-tray", flag.ExitOnError)
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "strata-tray %s: the Strata Companion tray icon.\n\n"+
			"Usage: strata-tray [-version]\n\n"+
			"It shows what the Strata server and its image encoder are doing, and talks\n"+
			"to strata-service's control API. One tray runs per login session: a second\n"+
			"start exits at once.\n\n", version.Version)
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[1:])
	if *showVersion {
		fmt.Println("strata-tray", version.Version)
		return
	}
	log.SetFlags(log.LstdFlags)
	log.SetPrefix("strata-tray: ")
	idleGC()

	lock, err := desktop.Lock()
	if errors.Is(err, desktop.ErrAlreadyRunning) {
		fmt.Fprintln(os.Stderr, "strata-tray: already running in this session")
		return
	}
	if err != nil {
		// Better two trays than none: say so and go on.
		log.Printf("the single-instance lock failed (%v); starting anyway", err)
	} else {
		defer lock.Close()
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// systray owns the main thread (GTK and the Win32 message loop want it);
	// onReady runs on its own goroutine and only posts work.
	systray.Run(func() { onReady(ctx) }, cancel)
}

func onReady(ctx context.Context) {
	view := newView()
	notifier := desktop.NewNotifier(writeAppIcon())
	ctl := trayctl.New()
	ctl.View = view
	ctl.Notifier = notifier
	ctl.Desktop = desktop.Desktop{}
	ctl.Autostart = desktop.Autostart{}
	ctl.Quit = systray.Quit
	ctl.Logf = log.Printf
	ctl.NoGPUVision = noGPUVision
	// A PC that lends its GPU shows lending from this account's own view
	// (it may run no service).
	ctl.ReadLending = lendshown.Read

	for id := traymodel.ItemID(0); id < traymodel.NumItems; id++ {
		go func(id traymodel.ItemID, ch <-chan struct{}) {
			for {
				select {
				case <-ctx.Done():
					return
				case <-ch:
					ctl.Click(id)
				}
			}
		}(id, view.items[id].ClickedCh)
	}
	go ctl.Run(ctx)
	w := &watch.Watcher{Logf: log.Printf}
	go w.Run(ctx, ctl.Update)
}

// noGPUVision asks this PC's probe whether any GPU here can run Strata's
// image encoder; "" when one can (the tray then offers "Vision: this GPU").
func noGPUVision(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rec := probe.Recommend(probe.Probe(ctx, probe.Options{}), nil)
	for _, e := range rec.Estimates {
		if e.Placement == settings.PlacementGPU && e.Available {
			return ""
		}
	}
	return "no GPU here can read pictures"
}

// writeAppIcon puts the app icon where the notification service can read it
// (it takes a file path) and returns the path, or "" on failure.
func writeAppIcon() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, "strata-companion", "strata-companion.png")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return ""
	}
	if err := os.WriteFile(p, assets.PNG("app"), 0o644); err != nil {
		return ""
	}
	return p
}

// idleGC turns the Go runtime's collections from "every time the heap
// doubles, and at least every two minutes" into "when the Go memory reaches
// what it uses now plus 32 MiB": an idle tray allocates next to nothing,
// and the forced collection every two minutes was its largest idle cost
// (bench/idle over 300 s). The heap's live part is the menu and the last
// state, a few MiB that do not grow, so the limit is reached only after a
// long busy time, and then each collection frees most of it. GOGC or
// GOMEMLIMIT in the environment win.
func idleGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	var now int64
	if s[0].Value.Kind() == metrics.KindUint64 {
		now = int64(s[0].Value.Uint64())
	}
	debug.SetMemoryLimit(now + 32<<20)
	debug.SetGCPercent(-1)
}
