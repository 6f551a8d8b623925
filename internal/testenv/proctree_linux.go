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

// children maps each parent pid to its children.
func children() map[int][]int {
	parent := map[int][]int{}
	for _, p := range procs() {
		parent[p.ppid] = append(parent[p.ppid], p.pid)
	}
	return parent
}

// GroupMembers lists the live (not zombie) processes in process group pgid.
func GroupMembers(pgid int) []int {
	var out []int
	for _, p := range procs() {
		if p.pgrp == pgid && p.state != "Z" && p.state != "X" {
			out = append(out, p.pid)
		}
	}
	return out
}

type proc struct {
	pid, ppid, pgrp int
	state           string
}

// procs reads every process's /proc/PID/stat (the fields after the
// command's closing parenthesis: state, ppid, pgrp, ...).
func procs() []proc {
	var out []proc
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
		if len(f) < 3 {
			continue
		}
		p := proc{state: f[0]}
		p.pid, _ = strconv.Atoi(filepath.Base(d))
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgrp, _ = strconv.Atoi(f[2])
		out = append(out, p)
	}
	return out
}
