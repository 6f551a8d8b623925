package portowner

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PeerUID is the account (uid) that holds the other end of a loopback TCP
// connection this process accepted (local: our address, remote: the
// peer's): the kernel's sock_diag answers for that one socket, at once.
// ok is false when it cannot be told.
func PeerUID(local, remote net.Addr) (uid uint32, ok bool) {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return 0, false
	}
	if uid, ok := diagUID(r, l); ok {
		return uid, true
	}
	return procUID(r, l)
}

// diagUID asks sock_diag for the socket src -> dst (exact match).
func diagUID(src, dst *net.TCPAddr) (uint32, bool) {
	fam := uint8(unix.AF_INET)
	s4, d4 := src.IP.To4(), dst.IP.To4()
	sip, dip := []byte(s4), []byte(d4)
	if s4 == nil || d4 == nil {
		fam = unix.AF_INET6
		sip, dip = src.IP.To16(), dst.IP.To16()
		if sip == nil || dip == nil {
			return 0, false
		}
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	req := make([]byte, 16+56)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], 20) // SOCK_DIAG_BY_FAMILY
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1)
	b := req[16:]
	b[0], b[1] = fam, unix.IPPROTO_TCP
	ne.PutUint32(b[4:], 0xffffffff) // every state
	id := b[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(src.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(dst.Port))
	copy(id[4:20], sip)
	copy(id[20:36], dip)
	ne.PutUint32(id[40:], 0xffffffff) // no cookie
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil || n < 16+68 {
		return 0, false
	}
	if typ := ne.Uint16(buf[4:]); typ != 20 {
		return 0, false // NLMSG_ERROR: no such socket
	}
	return ne.Uint32(buf[16+64:]), true
}

// procUID finds the socket src -> dst in /proc/net/tcp{,6} (slower: for a
// kernel without sock_diag).
func procUID(src, dst *net.TCPAddr) (uint32, bool) {
	want := hexAddr(src) + " " + hexAddr(dst)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) > 7 && fs[1]+" "+fs[2] == want {
				n, err := strconv.ParseUint(fs[7], 10, 32)
				return uint32(n), err == nil
			}
		}
	}
	return 0, false
}

// hexAddr is a as /proc/net/tcp writes it (IPv4: 0100007F:1F90).
func hexAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%08X:%04X", binary.LittleEndian.Uint32(ip), a.Port)
}
