package portowner

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// find reads the listening sockets of /proc/net/tcp{,6} and the process
// whose descriptors hold that socket's inode.
func find(port int) (Owner, bool) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listening(f, port, inodes)
	}
	if len(inodes) == 0 {
		return Owner{}, false
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		fds, err := os.ReadDir(p + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(p + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
				pid, _ := strconv.Atoi(filepath.Base(p))
				b, _ := os.ReadFile(p + "/cmdline")
				argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
				return Owner{PID: pid, Cmdline: cmdline(argv)}, true
			}
		}
	}
	return Owner{}, false
}

// listening adds the inodes of sockets listening on port in file.
func listening(file string, port int, out map[string]bool) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(fs) < 10 || fs[3] != "0A" || !strings.HasSuffix(fs[1], want) {
			continue
		}
		out[fs[9]] = true
	}
}
