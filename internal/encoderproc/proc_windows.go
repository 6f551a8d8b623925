package encoderproc

import (
	"os/exec"
	"unsafe"

	"golang.org/x/sys/windows"
)

func setProcAttr(*exec.Cmd) {}

// afterStart puts the encoder into a Job Object that kills it when the last
// handle closes: the agent holds that handle, so when the agent dies (its ssh
// session torn down, or killed) Windows ends the encoder too. The returned
// function closes the handle after the encoder exited.
func afterStart(cmd *exec.Cmd) func() {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return nil
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return nil
	}
	return func() { windows.CloseHandle(job) }
}
