//go:build !linux

package live_test

import "testing"

// watchRenames: no inotify here; -1 says "not counted".
func watchRenames(t *testing.T, dir, name string) func() int { return func() int { return -1 } }
