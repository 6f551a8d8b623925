package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// KillTree kills pid and every process descended from it (found through
// /proc), children first listed, all with SIGKILL.
func KillTree(pid int) {
	for _, p := range Descendants(pid) {
		syscall.Kill(p, syscall.SIGKILL)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// Descendants lists the processes below pid.
func Descendants(pid int) []int {
	parent := children()
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range parent[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// Children lists the processes whose parent is ppid.
func Children(ppid int) []int { return children()[ppid] }

// children maps each parent pid to its children, from /proc/*/stat (the
// fields after the command's closing parenthesis: state, ppid, ...).
func children() map[int][]int {
	parent := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		me, _ := strconv.Atoi(filepath.Base(d))
		parent[pp] = append(parent[pp], me)
	}
	return parent
}
