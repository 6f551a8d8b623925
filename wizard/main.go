// Command strata-setup is the first-run setup wizard of Strata Companion.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/strata-companion/companion/internal/version"
)

func main() {
	fs := flag.NewFlagSet("strata-setup", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "strata-setup %s: the Strata Companion setup wizard.\n\nUsage: strata-setup\n\nNot yet available in this build; use \"strata-service setup --cli\".\n", version.Version)
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[1:])
	fmt.Fprintln(os.Stderr, "strata-setup: not yet available in this build")
	os.Exit(1)
}
