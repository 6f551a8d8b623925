package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
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
