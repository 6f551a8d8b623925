//go:build windows || darwin

package svcpaths

// On Windows and macOS internal/locations already gives every account the
// machine-wide folders.
func systemDirs() *dirs { return nil }
