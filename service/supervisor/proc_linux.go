package supervisor

import "syscall"

// setDeathSignal asks Linux to SIGTERM the server if the supervisor itself
// dies without stopping it (killed, crashed), so no Strata outlives its
// service and holds the port and the GPU. (The signal is tied to the thread
// that started the child; Go does not end its threads while the program
// runs.)
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
