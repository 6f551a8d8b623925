// Command strata-standin stands in for Strata's serve/server.py in tests and
// demos: `strata-standin [serve/server.py] --engine strata --config C --port P`.
// See internal/fakestrata and docs/service.md.
package main

import (
	"os"

	"github.com/strata-companion/companion/internal/fakestrata"
)

func main() { os.Exit(fakestrata.Main(os.Args[1:])) }
