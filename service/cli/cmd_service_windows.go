package cli

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/strata-companion/companion/internal/locations"
)

func isAdmin() bool { return windows.GetCurrentProcessToken().IsElevated() }

// serviceWorkDir: kardianos does not set a working folder on Windows; the
// service starts in System32 and the supervisor sets Strata's own.
func serviceWorkDir() string { return "" }

// setRecovery sets the restart ladder kardianos cannot (it sets one
// action): restart after 5 s, then 30 s, then 2 min; the count resets after
// a day without failures. Also on a non-zero exit, not only a crash.
func setRecovery() error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	if err != nil {
		return err
	}
	defer s.Close()
	ladder := []mgr.RecoveryAction{
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 30 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 2 * time.Minute},
	}
	if err := s.SetRecoveryActions(ladder, uint32((24 * time.Hour).Seconds())); err != nil {
		return fmt.Errorf("setting the restart ladder: %w", err)
	}
	if err := s.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return fmt.Errorf("restarting also after an exit with an error code: %w", err)
	}
	return nil
}

func prepareServiceUser(name string) error {
	if name != "" {
		return errors.New("--user is for Linux and macOS; on Windows the service runs as LocalSystem")
	}
	return nil
}

// runUnderServiceManager runs the service dispatcher directly when the
// service control manager (services.exe) started us. kardianos decides by
// svc.IsWindowsService, which wine answers wrongly (it runs services in
// session 1, so they look interactive and the dispatcher is never called:
// `start` times out). The parent's name is a check that holds everywhere.
func runUnderServiceManager(p *program) (bool, error) {
	if !startedByServiceManager() {
		return false, nil
	}
	p.logf("started by services.exe: running the service dispatcher")
	return true, svc.Run(serviceName, &winHandler{p: p})
}

// startedByServiceManager: our parent is services.exe.
func startedByServiceManager() bool {
	parent, err := parentImage()
	return err == nil && strings.EqualFold(filepath.Base(parent), "services.exe")
}

// parentImage is the parent process's program path. The parent is found in
// a process snapshot (os.Getppid asks the same table).
func parentImage() (string, error) {
	ppid := uint32(os.Getppid())
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return "", err
	}
	defer windows.CloseHandle(snap)
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		if e.ProcessID == ppid {
			return windows.UTF16ToString(e.ExeFile[:]), nil
		}
	}
	return "", fmt.Errorf("no process %d: %w", ppid, err)
}

type winHandler struct{ p *program }

func (h *winHandler) Execute(args []string, r <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.StartPending}
	if err := h.p.start(); err != nil {
		h.p.logf("starting: %v", err)
		return true, 1
	}
	changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for c := range r {
		switch c.Cmd {
		case svc.Interrogate:
			changes <- c.CurrentStatus
		case svc.Stop, svc.Shutdown:
			changes <- svc.Status{State: svc.StopPending, WaitHint: uint32((h.p.opts.stopTimeout + 15*time.Second).Milliseconds())}
			h.p.stop()
			return false, 0
		}
	}
	return false, 0
}

// serviceManagerWorks: Windows always has its service control manager.
func serviceManagerWorks() (bool, string) { return true, "" }

// lenderLogFile is where the lender service writes (a Windows service has
// no console).
func lenderLogFile() string { return filepath.Join(locations.Path(locations.LogDir), "lender.log") }

// lenderLogWords says where the lender service's words are.
var lenderLogWords = "see its log, " + lenderLogFile()

// runLenderUnderServiceManager runs `lend --foreground` as the lender
// service when services.exe started it: the dispatcher is told at once
// that it runs (the setup it does first may take longer than the 30 s
// Windows waits), its words go to its log, and a stop ends it as Ctrl-C
// does in a console. A run that ends by itself with an error exits with a
// service-specific code, so the recovery actions restart it.
func runLenderUnderServiceManager(env *cliEnv, run func(context.Context) error) (bool, error) {
	if !startedByServiceManager() {
		return false, nil
	}
	locations.EnsureDir(locations.LogDir)
	lj := &lumberjack.Logger{Filename: lenderLogFile(), MaxSize: 5, MaxBackups: 2}
	defer lj.Close()
	lg := log.New(lj, "", log.LstdFlags)
	w := logWriter{lg}
	env.stdout, env.stderr = w, w
	return true, svc.Run(lenderServiceName, &lenderHandler{run: run, logf: lg.Printf})
}

// logWriter turns a command's output into log lines.
type logWriter struct{ l *log.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			w.l.Print(line)
		}
	}
	return len(p), nil
}

type lenderHandler struct {
	run  func(context.Context) error
	logf func(string, ...any)
}

func (h *lenderHandler) Execute(args []string, r <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.run(ctx) }()
	changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case err := <-done:
			if err != nil {
				h.logf("the lender stopped: %v", err)
				return true, 1
			}
			return false, 0
		case c := <-r:
			switch c.Cmd {
			case svc.Interrogate:
				changes <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				changes <- svc.Status{State: svc.StopPending, WaitHint: 15000}
				cancel()
				select {
				case <-done:
				case <-time.After(15 * time.Second):
					h.logf("the lender did not stop in time")
				}
				return false, 0
			}
		}
	}
}
