// Package version is the companion's version, set at build time with
// -ldflags "-X github.com/strata-companion/companion/internal/version.Version=..."
// (the Makefile reads it from FyneApp.toml).
package version

// Version of this build.
var Version = "0.1.0-dev"
