//go:build !windows

package live

const exeSuffix = ""
