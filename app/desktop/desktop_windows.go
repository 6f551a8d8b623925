package desktop

import (
	"context"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	user32      = windows.NewLazySystemDLL("user32.dll")
	pMessageBox = user32.NewProc("MessageBoxW")
)

func confirm(ctx context.Context, title, question string) (yes, asked bool) {
	const (
		mbYesNo        = 0x00000004
		mbIconQuestion = 0x00000020
		mbSetForeg     = 0x00010000
		idYes          = 6
	)
	t, _ := windows.UTF16PtrFromString(title)
	q, _ := windows.UTF16PtrFromString(question)
	r, _, _ := pMessageBox.Call(0, uintptr(unsafe.Pointer(q)), uintptr(unsafe.Pointer(t)), mbYesNo|mbIconQuestion|mbSetForeg)
	if r == 0 {
		return false, false
	}
	return r == idYes, true
}

func open(target string) error {
	verb, _ := windows.UTF16PtrFromString("open")
	t, err := windows.UTF16PtrFromString(target)
	if err != nil {
		return err
	}
	if err := windows.ShellExecute(0, verb, t, nil, nil, windows.SW_SHOWNORMAL); err != nil {
		return fmt.Errorf("opening %s: %w", target, err)
	}
	return nil
}
