// Command strata-standin stands in for Strata's serve/server.py in tests and
// demos: `strata-standin [serve/server.py] --engine strata --config C --port P`.
//
// `strata-standin make-root DIR [--port N] [--step D] [--api-key K] [--mode M]`
// lays out a fake Strata install in DIR that runs this binary, for demos
// (`strata-service run --strata-root DIR`). See docs/service.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-companion/companion/internal/fakestrata"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "make-root" {
		os.Exit(makeRoot(os.Args[2:]))
	}
	os.Exit(fakestrata.Main(os.Args[1:]))
}

func makeRoot(args []string) int {
	fs := flag.NewFlagSet("strata-standin make-root", flag.ContinueOnError)
	port := fs.Int("port", 0, "the config's port (default: a free one now)")
	step := fs.String("step", "1s", "the pause between startup lines")
	key := fs.String("api-key", "", "the config's api_key")
	mode := fs.String("mode", "", "misbehaviour (see STRATA_STANDIN_MODE)")
	tag := fs.String("tag", "demo", "the config's tag (strata-<tag>.json)")
	dir := ""
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		dir, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if dir == "" {
		dir = fs.Arg(0)
	}
	if dir == "" {
		fmt.Fprintln(os.Stderr, "usage: strata-standin make-root DIR [--port N] [--step 1s] [--api-key K] [--mode M]")
		return 2
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.Abs(self)
	}
	if err == nil {
		dir, err = filepath.Abs(dir)
	}
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	var r *fakestrata.Root
	if err == nil {
		r, err = fakestrata.MakeRoot(dir, self, fakestrata.RootOptions{Port: *port, Step: *step, APIKey: *key, Mode: *mode, Tag: *tag})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata-standin make-root:", err)
		return 1
	}
	fmt.Printf("A fake Strata install is in %s (config %s, port %d).\n", r.Dir, r.Config, r.Port)
	fmt.Printf("Run it supervised: strata-service run --strata-root %s --config %s\n", r.Dir, r.Config)
	return 0
}
