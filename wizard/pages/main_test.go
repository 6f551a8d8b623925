package pages

import (
	"os"
	"testing"
)

// TestMain gives fyne a cache folder of the tests' own: rendering text loads
// the system fonts through go-text, which writes its font index into the
// user's cache folder (~/.cache/font_index_v6.cache). Tests leave nothing
// in the real home folder.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pages-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
