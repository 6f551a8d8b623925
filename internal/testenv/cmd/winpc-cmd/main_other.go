//go:build !windows

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "winpc-cmd is the Windows half of a test fixture: build it with GOOS=windows")
	os.Exit(2)
}
