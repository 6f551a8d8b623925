package elevate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

var pShellExecuteEx = windows.NewLazySystemDLL("shell32.dll").NewProc("ShellExecuteExW")

// shellExecuteInfo is SHELLEXECUTEINFOW (golang.org/x/sys/windows has
// ShellExecute, which neither waits nor gives the exit code).
type shellExecuteInfo struct {
	cbSize       uint32
	fMask        uint32
	hwnd         windows.Handle
	lpVerb       *uint16
	lpFile       *uint16
	lpParameters *uint16
	lpDirectory  *uint16
	nShow        int32
	hInstApp     windows.Handle
	lpIDList     uintptr
	lpClass      *uint16
	hkeyClass    windows.Handle
	dwHotKey     uint32
	hIcon        windows.Handle
	hProcess     windows.Handle
}

// run runs exe with the "runas" verb: Windows shows its UAC prompt
// (or asks for an administrator's password), then runs it elevated. It goes
// through cmd.exe, hidden, so that its words land in a file of this user's
// (an elevated program's output cannot be piped back), and the exit code
// comes from its process handle.
func run(ctx context.Context, exe string, args []string) error {
	f, err := os.CreateTemp("", "strata-elevated-*.txt")
	if err != nil {
		return err
	}
	out := f.Name()
	f.Close()
	defer os.Remove(out)
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		return err
	}
	line := `/s /c "` + windows.ComposeCommandLine(append([]string{exe}, args...)) + ` >` + windows.EscapeArg(out) + ` 2>&1"`
	verb, _ := windows.UTF16PtrFromString("runas")
	file, _ := windows.UTF16PtrFromString(filepath.Join(sys, "cmd.exe"))
	params, err := windows.UTF16PtrFromString(line)
	if err != nil {
		return err
	}
	const (
		seeMaskNoCloseProcess = 0x00000040
		seeMaskNoAsync        = 0x00000100
	)
	info := shellExecuteInfo{fMask: seeMaskNoCloseProcess | seeMaskNoAsync, lpVerb: verb, lpFile: file, lpParameters: params, nShow: windows.SW_HIDE}
	info.cbSize = uint32(unsafe.Sizeof(info))
	if r, _, err := pShellExecuteEx.Call(uintptr(unsafe.Pointer(&info))); r == 0 {
		if errors.Is(err, windows.ERROR_CANCELLED) {
			return ErrDeclined // the UAC prompt was answered No
		}
		return fmt.Errorf("starting strata-service as administrator: %v", err)
	}
	if info.hProcess == 0 {
		return errors.New("starting strata-service as administrator: Windows gave no process to wait for")
	}
	done := make(chan uint32, 1)
	go func() {
		defer windows.CloseHandle(info.hProcess)
		windows.WaitForSingleObject(info.hProcess, windows.INFINITE)
		var code uint32
		windows.GetExitCodeProcess(info.hProcess, &code)
		done <- code
	}()
	var code uint32
	select {
	case code = <-done:
	case <-ctx.Done():
		return fmt.Errorf("strata-service %s did not end in time", strings.Join(args, " "))
	}
	if code == 0 {
		return nil
	}
	b, _ := os.ReadFile(out)
	if msg := serviceError(b); msg != "" {
		return errors.New(msg)
	}
	return fmt.Errorf("strata-service %s ended with exit code %d", strings.Join(args, " "), code)
}
