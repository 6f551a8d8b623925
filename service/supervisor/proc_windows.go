package supervisor

import (
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sysProc is the Job Object the server runs in: Strata puts its engine and
// encoder in a job of their own, and ours (kill-on-close) makes sure nothing
// of the tree outlives a kill, even a child started before ours took hold.
type sysProc struct {
	job windows.Handle
}

var (
	kernel32         = windows.NewLazySystemDLL("kernel32.dll")
	user32           = windows.NewLazySystemDLL("user32.dll")
	procAllocConsole = kernel32.NewProc("AllocConsole")
	procGetConsoleWn = kernel32.NewProc("GetConsoleWindow")
	procShowWindow   = user32.NewProc("ShowWindow")
	consoleOnce      sync.Once
)

// ensureConsole gives a service (which has no console) a hidden one: a
// console control event reaches only processes that share the sender's
// console, and Ctrl-Break is how Strata is asked to stop on Windows.
func ensureConsole() {
	consoleOnce.Do(func() {
		if h, _, _ := procGetConsoleWn.Call(); h != 0 {
			return
		}
		procAllocConsole.Call()
		if h, _, _ := procGetConsoleWn.Call(); h != 0 {
			procShowWindow.Call(h, 0) // SW_HIDE
		}
	})
}

func setProcAttr(cmd *exec.Cmd) {
	ensureConsole()
	// A process group of its own, so Ctrl-Break reaches the server and not
	// us; normal priority explicitly: at low priority Strata loads its
	// experts ~24x slower.
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.NORMAL_PRIORITY_CLASS,
	}
}

func attach(cmd *exec.Cmd) sysProc {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return sysProc{}
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return sysProc{}
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return sysProc{}
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return sysProc{}
	}
	return sysProc{job: job}
}

// interrupt sends Ctrl-Break to the server's process group.
func (p sysProc) interrupt(pid int) error {
	return windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(pid))
}

// kill ends the whole job (the server and everything it started).
func (p sysProc) kill(pid int) {
	if p.job != 0 {
		windows.TerminateJobObject(p.job, 1)
		return
	}
	if h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid)); err == nil {
		windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	}
}

func (p sysProc) close() {
	if p.job != 0 {
		windows.CloseHandle(p.job)
	}
}
