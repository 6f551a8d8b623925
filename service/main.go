// Command strata-service runs the Strata server as an OS service, supervises
// it, serves the control API, and is the companion's command line. This file
// is the process wiring only: the command line is service/cli, the daemon
// service/daemon, the owner of Strata's config and the settings
// internal/backend.
//
// The Go runtime re-reads the cgroup CPU limit every 10 s to adjust
// GOMAXPROCS; for an idle supervisor that was 6 of its 10 wake-ups a minute
// (bench/idle). The service needs no such adjustment, so it is off.
//
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/strata-companion/companion/service/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), cli.StopSignals...)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
