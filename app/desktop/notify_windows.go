package desktop

import (
	"context"
	"errors"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/strata-companion/companion/app/traymodel"
)

// Notifier shows a balloon from the tray's own icon (Windows 10 and 11 turn
// it into a toast). getlantern/systray v1.2.2 has no notification call, but
// its icon is an ordinary Shell_NotifyIcon entry (window class
// "SystrayClass", icon id 100): modifying that entry with NIF_INFO is the
// documented way to show a balloon, no extra program involved.
type Notifier struct {
	mu sync.Mutex
}

// NewNotifier returns the notifier; iconPath is unused on Windows (the
// balloon shows the tray icon).
func NewNotifier(iconPath string) *Notifier { return &Notifier{} }

var (
	shell32           = windows.NewLazySystemDLL("shell32.dll")
	pShellNotifyIconW = shell32.NewProc("Shell_NotifyIconW")
	pFindWindowExW    = user32.NewProc("FindWindowExW")
	pGetWindowTPID    = user32.NewProc("GetWindowThreadProcessId")
)

// notifyIconData is NOTIFYICONDATAW (the layout systray uses too).
type notifyIconData struct {
	Size                       uint32
	Wnd                        windows.Handle
	ID, Flags, CallbackMessage uint32
	Icon                       windows.Handle
	Tip                        [128]uint16
	State, StateMask           uint32
	Info                       [256]uint16
	TimeoutOrVersion           uint32
	InfoTitle                  [64]uint16
	InfoFlags                  uint32
	GUIDItem                   windows.GUID
	BalloonIcon                windows.Handle
}

// trayWindow finds this process's systray window.
func trayWindow() (windows.Handle, error) {
	class, _ := windows.UTF16PtrFromString("SystrayClass")
	pid := uint32(os.Getpid())
	var h uintptr
	for {
		h, _, _ = pFindWindowExW.Call(0, h, uintptr(unsafe.Pointer(class)), 0)
		if h == 0 {
			return 0, errors.New("the tray icon's window was not found")
		}
		var owner uint32
		pGetWindowTPID.Call(h, uintptr(unsafe.Pointer(&owner)))
		if owner == pid {
			return windows.Handle(h), nil
		}
	}
}

// Notify shows n as a balloon.
func (n *Notifier) Notify(ctx context.Context, no traymodel.Notice) error {
	const (
		nimModify = 0x1
		nifInfo   = 0x10
		niifInfo  = 0x1
		niifWarn  = 0x2
	)
	n.mu.Lock()
	defer n.mu.Unlock()
	w, err := trayWindow()
	if err != nil {
		return err
	}
	d := notifyIconData{Wnd: w, ID: 100, Flags: nifInfo, InfoFlags: niifInfo}
	if no.Urgent {
		d.InfoFlags = niifWarn
	}
	d.Size = uint32(unsafe.Sizeof(d))
	copyUTF16(d.InfoTitle[:], no.Title)
	copyUTF16(d.Info[:], no.Body)
	if r, _, err := pShellNotifyIconW.Call(nimModify, uintptr(unsafe.Pointer(&d))); r == 0 {
		return err
	}
	return nil
}

func copyUTF16(dst []uint16, s string) {
	u, _ := windows.UTF16FromString(s)
	if len(u) > len(dst) {
		u = u[:len(dst)]
		u[len(u)-1] = 0
	}
	copy(dst, u)
}

// Close does nothing on Windows.
func (n *Notifier) Close() error { return nil }
