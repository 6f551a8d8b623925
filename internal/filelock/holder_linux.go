package filelock

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// holder is the process that holds f's lock, from the kernel's own list
// (/proc/locks) rather than what the file says, else what the holder wrote.
func holder(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	sys := st.Sys().(*syscall.Stat_t)
	dev := fmt.Sprintf("%02x:%02x:%d", unixMajor(sys.Dev), unixMinor(sys.Dev), sys.Ino)
	if pid := procLocksHolder(dev); pid > 0 {
		return pid
	}
	return HolderPID(f.Name())
}

// procLocksHolder reads /proc/locks for an flock on dev ("maj:min:inode",
// as the kernel writes it: "1: FLOCK ADVISORY WRITE 1234 08:01:5678 0 EOF").
func procLocksHolder(dev string) int {
	pl, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer pl.Close()
	sc := bufio.NewScanner(pl)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] == "->" || f[1] != "FLOCK" {
			continue
		}
		if strings.EqualFold(f[5], dev) {
			pid, _ := strconv.Atoi(f[4])
			return pid
		}
	}
	return 0
}

func unixMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func unixMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }
