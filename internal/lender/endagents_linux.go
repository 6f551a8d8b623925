package lender

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/strata-companion/companion/internal/account"
)

// endAgents ends the account's processes that run a program from the agent
// folder (the agent, its encoder), now; it returns how many.
func endAgents(_ context.Context, _ Options, a *account.Account, dir string) int {
	if dir == "" {
		return 0
	}
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			continue
		}
		st, err := os.Stat(filepath.Join("/proc", e.Name()))
		if err != nil || st.Sys().(*syscall.Stat_t).Uid != a.UID {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
