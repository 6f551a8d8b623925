package supervisor

import (
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// The guard ends the server's whole process group when the supervisor dies
// without doing so itself (kill -9 of `run`, a crash). The server gets a
// parent-death SIGKILL, but its engine and encoder are its children, not
// ours: nothing tells them. The guard is this same program started again
// (os.Executable) with guardEnv set; its stdin is a pipe whose only writer
// is the supervisor. A byte means "the group is ended, go"; end of input
// without one means the supervisor is gone, and the guard SIGKILLs the
// group. It runs in a process group of its own, so neither the terminal's
// Ctrl-C nor the group's SIGTERM reaches it first.
const guardEnv = "STRATA_SUPERVISOR_GUARD_PGID"

func init() {
	if v := os.Getenv(guardEnv); v != "" {
		os.Exit(guardMain(v))
	}
}

func guardMain(v string) int {
	pgid, err := strconv.Atoi(v)
	if err != nil || pgid <= 1 {
		return 2
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	var b [1]byte
	if n, _ := os.Stdin.Read(b[:]); n == 1 {
		return 0
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	return 0
}

// guard is the supervisor's end of one guard.
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

// startGuard starts the guard of process group pgid; nil when it cannot
// (the server's parent-death signal still ends the server itself).
func startGuard(pgid int) *guard {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command(self)
	// What `ps` shows: say what it is.
	cmd.Args = []string{"strata-service-guard", "group", strconv.Itoa(pgid)}
	cmd.Env = append(os.Environ(), guardEnv+"="+strconv.Itoa(pgid))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil
	}
	return &guard{cmd: cmd, w: w}
}

// release tells the guard the group is ended, and reaps it.
func (g *guard) release() {
	if g == nil {
		return
	}
	g.w.Write([]byte{1})
	g.w.Close()
	g.cmd.Wait()
}
