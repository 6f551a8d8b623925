//go:build !demo

package main

import "github.com/strata-companion/companion/internal/setupflow"

// demoDeps: the shipped build has no demo machine (build with -tags demo
// for the screenshots).
func demoDeps(setupflow.ConfirmHostKey) (setupflow.Deps, bool) { return setupflow.Deps{}, false }

// demoLendCode: no demo, no code.
func demoLendCode() string { return "" }
