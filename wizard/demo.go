//go:build demo

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/setupflow/demo"
)

// demoDeps is the canned demo machine when STRATA_SETUP_DEMO=1: for the
// screenshots (`make screenshots`) and trying the wizard without a GPU.
// Only a build with `-tags demo` has it; the shipped strata-setup does not
// link the demo world.
func demoDeps(confirm setupflow.ConfirmHostKey) (setupflow.Deps, bool) {
	if os.Getenv("STRATA_SETUP_DEMO") != "1" {
		return setupflow.Deps{}, false
	}
	dir := "/home/sam/Strata" // a path for show; nothing is read or written there
	w := demo.NewWorld(dir)
	w.Delay = 300 * time.Millisecond
	if f := os.Getenv("STRATA_SETUP_DEMO_FAIL"); f != "" {
		w.Fail[f] = fmt.Errorf("the engine stopped while filling the expert cache (exit code 3221225477): the GPU ran out of memory. Close other programs that use the GPU, or choose the second PC to free VRAM, then try again")
	}
	if os.Getenv("STRATA_SETUP_DEMO_LENDERS") == "none" {
		w.Found = nil // no PC lends on the network: the address path
	}
	if os.Getenv("STRATA_SETUP_DEMO_CONFIGURED") == "1" {
		w.Settings = &settings.Settings{StrataRoot: dir, ConfigPath: w.Config, Vision: settings.PlacementGPU}
		w.Installed, w.Running = true, true
	}
	return w.Deps(confirm), true
}

// demoLendCode is the code the demo's lenders take (the autopilot types it).
func demoLendCode() string { return demo.LendCode.String() }
