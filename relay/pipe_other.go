//go:build !linux

package main

import "os"

// widenPipes is Linux-only (F_SETPIPE_SZ).
func widenPipes(...*os.File) {}
