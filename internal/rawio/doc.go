// Package rawio reads and writes a file descriptor with raw read(2) and
// write(2), without telling the Go scheduler. Only for calls that do not
// block (a non-blocking socket, page-cache file I/O): through syscall.Read
// and syscall.Write each call enters the scheduler's syscall state, which
// wakes the runtime's sysmon thread from its idle sleep and, for a call over
// its 20 us tick, hands the P to another thread and back (bench/relay:
// ~340 of the relay's ~560 context switches per .sve at 1 Gbit/s).
// (Linux only; elsewhere its callers use the plain calls.)
package rawio
