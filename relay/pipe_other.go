//go:build !linux

package main

// widenPipes is Linux-only (F_SETPIPE_SZ).
func widenPipes() {}
