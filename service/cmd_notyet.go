package main

import (
	"context"
	"fmt"
)

// notYet registers commands whose feature has not landed yet: they say so
// honestly instead of pretending. Each is removed from this list by the
// change that implements it in its own cmd_<name>.go file.
var notYet = map[string]string{
}

func init() {
	for name, summary := range notYet {
		name := name
		register(&command{
			name:    name,
			summary: summary + " [not yet available]",
			usage:   "strata-service " + name,
			run: func(context.Context, *cliEnv, []string) error {
				return fmt.Errorf("%q is not yet available in this build of Strata Companion", name)
			},
		})
	}
}
