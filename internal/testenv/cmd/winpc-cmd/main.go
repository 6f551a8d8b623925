//go:build windows

// Command winpc-cmd is the Windows half of testenv's Windows second PC: it
// runs `cmd.exe /c <command>` with the command line exactly as the ssh
// client sent it (from STRATA_WINPC_COMMAND), as Windows' OpenSSH does, and
// exits with cmd's exit code. wine would re-quote a command passed as an
// argument; CreateProcess with a raw command line does not.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

func main() {
	line := os.Getenv("STRATA_WINPC_COMMAND")
	os.Unsetenv("STRATA_WINPC_COMMAND")
	comspec := os.Getenv("ComSpec")
	if comspec == "" {
		comspec = filepath.Join(os.Getenv("SystemRoot"), "system32", "cmd.exe")
	}
	cmd := exec.Command(comspec)
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `cmd.exe /c ` + line}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "winpc-cmd:", err)
		os.Exit(1)
	}
}
