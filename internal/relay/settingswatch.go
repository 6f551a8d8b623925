package relay

import (
	"os"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/settings"
)

// SettingsFile reads the companion settings for each picture, cheaply: one
// stat, and a reread only when the file's size or modification time changed
// (the backend replaces it atomically, so a new file always shows as one).
type SettingsFile struct {
	Path string

	mu    sync.Mutex
	size  int64
	mtime time.Time
	ino   uint64
	have  bool
	st    *settings.Settings
	err   error
}

// Get returns the settings as they are now. A missing file gives empty
// settings; an unreadable or corrupt one gives the error (path and cause).
func (f *SettingsFile) Get() (*settings.Settings, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, serr := os.Stat(f.Path)
	if serr == nil && f.have && fi.Size() == f.size && fi.ModTime().Equal(f.mtime) && fileID(fi) == f.ino {
		return f.st, f.err
	}
	st, err := settings.Load(f.Path)
	f.st, f.err = st, err
	f.have = serr == nil
	if serr == nil {
		f.size, f.mtime, f.ino = fi.Size(), fi.ModTime(), fileID(fi)
	}
	return st, err
}
