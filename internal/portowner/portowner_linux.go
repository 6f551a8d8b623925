package portowner

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// listeners reads the listening sockets of /proc/net/tcp{,6} (their
// account is there) and the processes whose descriptors hold them.
func listeners(port int) []Owner {
	socks := map[string]int{} // inode -> uid
	var order []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listening(f, port, socks, &order)
	}
	if len(socks) == 0 {
		return nil
	}
	found := map[string]Owner{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if len(found) == len(socks) {
			break
		}
		fds, err := os.ReadDir(p + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(p + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			ino := strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")
			if _, ok := socks[ino]; ok {
				if _, seen := found[ino]; !seen {
					pid, _ := strconv.Atoi(filepath.Base(p))
					b, _ := os.ReadFile(p + "/cmdline")
					argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
					found[ino] = Owner{PID: pid, Cmdline: cmdline(argv)}
				}
			}
		}
	}
	var out []Owner
	for _, ino := range order {
		o := found[ino]
		o.UID = socks[ino]
		if u, err := user.LookupId(strconv.Itoa(o.UID)); err == nil {
			o.User = u.Username
		}
		out = append(out, o)
	}
	return out
}

func listenerUIDs(port int) []int {
	socks := map[string]int{}
	var order []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listening(f, port, socks, &order)
	}
	var out []int
	for _, ino := range order {
		out = append(out, socks[ino])
	}
	return out
}

// listening adds the inodes (and accounts) of sockets listening on port
// in file.
func listening(file string, port int, out map[string]int, order *[]string) {
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
		if _, dup := out[fs[9]]; dup {
			continue
		}
		uid, err := strconv.Atoi(fs[7])
		if err != nil {
			uid = -1
		}
		out[fs[9]] = uid
		*order = append(*order, fs[9])
	}
}

// cmdline joins argv as one line for people to read.
func cmdline(argv []string) string { return strings.Join(argv, " ") }
