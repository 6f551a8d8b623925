//go:build tools

// Package tools pins the modules the programs use (at the versions in
// go.mod) so that `go mod tidy` keeps them while features are built on top.
package tools

import (
	_ "fyne.io/fyne/v2/app"
	_ "fyne.io/fyne/v2/test"
	_ "github.com/getlantern/systray"
	_ "github.com/kardianos/service"
	_ "github.com/kevinburke/ssh_config"
	_ "golang.org/x/crypto/ssh/agent"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "golang.org/x/sys/windows/svc/mgr"
	_ "gopkg.in/natefinch/lumberjack.v2"
)
