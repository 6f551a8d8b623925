package settings

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/remotecmd"
)

// hostName is a DNS name (labels of letters, digits and -, not starting
// with -) or, checked apart, an IP address.
var hostName = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,62}))*\.?$`)

// userName is an account name as ssh passes it: letters, digits and . _ - @
// \ and space (Windows accounts), not starting with - or a space.
var userName = regexp.MustCompile(`^[\p{L}\p{N}._@\\][\p{L}\p{N}._@\\ -]{0,127}$`)

// CheckHost refuses what is not a host name or an IP address.
func CheckHost(h string) error {
	if h == "" {
		return errors.New("the second PC's host is empty")
	}
	ip := strings.Trim(h, "[]")
	if i := strings.IndexByte(ip, '%'); i > 0 && strings.Contains(ip, ":") {
		ip = ip[:i] // an IPv6 zone (fe80::1%eth0)
	}
	if net.ParseIP(ip) != nil || (len(h) <= 253 && hostName.MatchString(h)) {
		return nil
	}
	return fmt.Errorf("the second PC's host %q is not a host name or an IP address", h)
}

// Check checks a second-PC record as a privileged program is about to
// use it: host, port and user that ssh takes as such, a host key that
// parses, a known OS, and folder and encoder names without shell syntax.
// Whether the host key and the key file are the right ones is not decided
// here (the backend checks the host key against the host itself and takes
// only the companion's own key file).
func (r Remote) Check() error {
	if err := CheckHost(r.Host); err != nil {
		return err
	}
	if r.Port < 0 || r.Port > 65535 {
		return fmt.Errorf("the second PC's port %d is not 1-65535 (0: 22)", r.Port)
	}
	if r.User != "" && !userName.MatchString(r.User) {
		return fmt.Errorf("the second PC's user %q is not an account name", r.User)
	}
	if r.HostKey != "" {
		if _, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(r.HostKey)); err != nil || len(strings.TrimSpace(string(rest))) > 0 {
			return fmt.Errorf("the second PC's host key is not one key in authorized_keys form (ssh-ed25519 AAAA...)")
		}
	}
	switch r.OS {
	case "", "linux", "darwin", "windows":
	default:
		return fmt.Errorf("the second PC's OS %q is not linux, darwin or windows", r.OS)
	}
	switch r.Arch {
	case "", "amd64", "arm64":
	default:
		return fmt.Errorf("the second PC's architecture %q is not amd64 or arm64", r.Arch)
	}
	if err := remotecmd.CheckPath("remote_dir", r.RemoteDir); err != nil {
		return err
	}
	if err := remotecmd.CheckPath("encoder_path", r.EncoderPath); err != nil {
		return err
	}
	if r.MAC != "" {
		if hw, err := net.ParseMAC(r.MAC); err != nil || len(hw) != 6 {
			return fmt.Errorf("the second PC's MAC %q is not a network card address (aa:bb:cc:dd:ee:ff)", r.MAC)
		}
	}
	if w := r.Wake; w != nil && w.Broadcast != "" {
		ip := net.ParseIP(w.Broadcast).To4()
		if ip == nil || ip.IsLoopback() || ip.IsMulticast() || ip.IsUnspecified() {
			return fmt.Errorf("the wake broadcast %q is not an IPv4 broadcast address of a network (e.g. 192.168.1.255 or 255.255.255.255)", w.Broadcast)
		}
	}
	if r.KeyFile != "" {
		if err := remotecmd.CheckPath("key_file", r.KeyFile); err != nil {
			return err
		}
	}
	return nil
}
