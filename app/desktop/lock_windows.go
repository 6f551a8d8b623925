package desktop

import (
	"errors"
	"io"

	"golang.org/x/sys/windows"
)

// ErrAlreadyRunning means another tray holds the session's lock.
var ErrAlreadyRunning = errors.New("a Strata Companion tray is already running in this session")

// Lock takes the one-tray-per-session lock: a named mutex in the session's
// Local\ namespace (Windows releases it when the process ends).
func Lock() (io.Closer, error) {
	name, _ := windows.UTF16PtrFromString(`Local\StrataCompanionTray`)
	h, err := windows.CreateMutex(nil, true, name)
	if errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		if h != 0 {
			windows.CloseHandle(h)
		}
		return nil, ErrAlreadyRunning
	}
	if err != nil {
		return nil, err
	}
	// The handle stays open for the life of the tray.
	return mutex(h), nil
}

type mutex windows.Handle

func (m mutex) Close() error { return windows.CloseHandle(windows.Handle(m)) }
