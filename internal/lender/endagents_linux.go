package lender

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/agent"
	"github.com/strata-companion/companion/internal/asowner"
)

// endAgents ends the account's processes that run a program from the agent
// folder (the agent, its encoder), now; it returns how many.
func endAgents(ctx context.Context, _ Options, a *account.Account, dir string) int {
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
	removeScratch(ctx, a)
	return n
}

// removeScratch removes the scratch folders the account's agents left in
// the temp folder (an agent ended by a kill cannot remove its own), as
// that account.
func removeScratch(ctx context.Context, a *account.Account) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), agent.ScratchPrefix+"*"))
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Sys().(*syscall.Stat_t).Uid != a.UID {
			continue
		}
		asowner.Command(ctx, a, "/", nil, "rm", "-rf", "--", d).Run()
	}
}
