package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procStat reads a process's group, start time and state from /proc.
func procStat(pid int) (pgid int, start uint64, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, "", false
	}
	// After the name: state(0) ppid(1) pgrp(2) ... starttime(19).
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, 0, "", false
	}
	pgid, _ = strconv.Atoi(f[2])
	start, _ = strconv.ParseUint(f[19], 10, 64)
	return pgid, start, f[0], true
}

func procStart(pid int) (uint64, bool) {
	_, st, _, ok := procStat(pid)
	return st, ok
}

// groupSince lists the live processes of group pgid started at or after
// start (older ones belong to another group that had that number) whose
// environment has EnvServerMark=mark (a process that reused the number is
// not ours; one whose environment cannot be read is not either).
func groupSince(pgid int, start uint64, mark string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		g, st, state, ok := procStat(pid)
		if ok && g == pgid && st >= start && state != "Z" && state != "X" && hasMark(pid, mark) {
			out = append(out, pid)
		}
	}
	return out
}

func endGroup(pgid int, gently bool) {
	sig := syscall.SIGKILL
	if gently {
		sig = syscall.SIGTERM
	}
	syscall.Kill(-pgid, sig)
}

func hasMark(pid int, mark string) bool {
	if mark == "" {
		return false
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := EnvServerMark + "=" + mark
	for _, kv := range strings.Split(string(env), "\x00") {
		if kv == want {
			return true
		}
	}
	return false
}
