// Command strata-vision-standin is a stand-in for Strata's strata-vision
// encoder (see package fakeencoder): same flags, same line protocol, a
// deterministic valid .sve per picture. For tests and benchmarks only.
package main

import (
	"os"

	"github.com/strata-companion/companion/internal/fakeencoder"
)

func main() { os.Exit(fakeencoder.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
