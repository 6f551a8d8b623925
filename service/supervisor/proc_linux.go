package supervisor

import "syscall"

// setDeathSignal makes Linux SIGKILL the server if the supervisor itself
// dies without stopping it (kill -9, a crash): SIGKILL, because a server
// that ignores SIGTERM would otherwise outlive its service and hold the port
// and the GPU. The rest of its process group (the engine, the encoder) is
// ended by the guard (guard_linux.go). (The signal is tied to the thread
// that started the child; Go does not end its threads while the program
// runs.)
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
