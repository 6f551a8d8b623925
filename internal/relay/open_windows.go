//go:build windows

package relay

// oNonblock: Windows opens have no FIFO wait; fstat still refuses non-regular files.
const oNonblock = 0
