//go:build !linux

package filelock

import "os"

// holder is what the holder wrote into the file.
func holder(f *os.File) int { return HolderPID(f.Name()) }
