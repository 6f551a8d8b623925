//go:build !windows

package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// elevate runs argv as root through pkexec, which asks for an
// administrator's password in the desktop's own window (polkit). The
// program goes on, in a session of its own, after this one ends; its exit
// code is written after its output.
func elevate(_ context.Context, argv []string, out string) error {
	pk, err := exec.LookPath("pkexec")
	if err != nil {
		return fmt.Errorf("this system has no pkexec to ask for the administrator's password: in a terminal, run sudo %s (and keep it open); this window then shows what it does",
			strings.Join(append([]string{"strata-service"}, withoutUser(argv[1:])...), " "))
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	// Not CommandContext: lending goes on after this window.
	cmd := exec.Command(pk, argv...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	go func() {
		defer f.Close()
		code := 0
		if err := cmd.Wait(); err != nil {
			code = 1
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() > 0 {
				code = ee.ExitCode()
			}
		}
		f.WriteString(endLine(code))
	}()
	return nil
}

func withoutUser(args []string) []string {
	for i, a := range args {
		if a == "--user" {
			return args[:i]
		}
	}
	return args
}

// exitWords are pkexec's own refusals (126: dismissed or not allowed, 127:
// the password was wrong).
func exitWords(code int) string {
	switch code {
	case 126, 127:
		return "the administrator's password was not given, so nothing was changed: try again and type it when asked"
	}
	return ""
}

// bootTime is when this PC started (Linux: /proc/stat's btime; zero
// elsewhere).
func bootTime() time.Time {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
}
