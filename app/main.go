// Command strata-tray is the tray icon of Strata Companion: it shows what the
// Strata server and its image encoder are doing and offers a small menu. It
// talks only to strata-service's control API.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/strata-companion/companion/internal/version"
)

func main() {
	fs := flag.NewFlagSet("strata-tray", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "strata-tray %s: the Strata Companion tray icon.\n\nUsage: strata-tray\n\nNot yet available in this build.\n", version.Version)
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[1:])
	fmt.Fprintln(os.Stderr, "strata-tray: not yet available in this build")
	os.Exit(1)
}
