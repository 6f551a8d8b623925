package pairing

import (
	"context"
	"net"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/remotecmd"
)

// posixMACScript prints the MAC address of the network card that carries
// this ssh connection on the second PC: the server address in
// $SSH_CONNECTION ("client port server port"), else the address we dialed,
// looked up in `ip -o addr`, then the card's /sys/class/net/<dev>/address.
const posixMACScript = `a=$(echo "$SSH_CONNECTION" | awk '{print $3}'); [ -n "$a" ] || a=@ADDR@; ` +
	`d=$(ip -o addr show 2>/dev/null | awk -v a="$a" '{split($4,p,"/"); if (p[1]==a) {print $2; exit}}'); ` +
	`d=${d%@*}; [ -n "$d" ] && cat "/sys/class/net/$d/address" 2>/dev/null`

// windowsMACScript does the same with PowerShell's Get-NetIPAddress and
// Get-NetAdapter (Windows 8 and later).
const windowsMACScript = `$a = ($env:SSH_CONNECTION -split ' ')[2]; if (-not $a) { $a = @ADDR@ }; ` +
	`$i = (Get-NetIPAddress -IPAddress $a -ErrorAction SilentlyContinue | Select-Object -First 1).InterfaceIndex; ` +
	`if ($i) { (Get-NetAdapter -InterfaceIndex $i -ErrorAction SilentlyContinue).MacAddress }`

var macRE = regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){5}$`)

// NormalizeMAC turns "AA-BB-CC-DD-EE-FF" or "aa:bb:..." into lower-case
// colon form; "" for anything that is not a usable unicast card address
// (all zeros: the loopback).
func NormalizeMAC(s string) string {
	s = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ":"))
	if !macRE.MatchString(s) || s == "00:00:00:00:00:00" {
		return ""
	}
	return s
}

// RemoteMAC finds the MAC address of the second PC's card that carries c
// (for Wake-on-LAN); "" when it cannot be told (a loopback, a tunnel, no
// `ip` command). shell is linkprobe.System's.
func RemoteMAC(ctx context.Context, c *ssh.Client, shell string) string {
	dialed := ""
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		dialed = ta.IP.String()
	}
	var cmd string
	if shell == "windows" {
		cmd = remotecmd.EncodedPowerShell(strings.Replace(windowsMACScript, "@ADDR@", remotecmd.PowerShellLiteral(dialed), 1))
	} else {
		cmd = strings.Replace(posixMACScript, "@ADDR@", remotecmd.POSIX(dialed), 1)
	}
	out, err := run(ctx, c, cmd)
	if err != nil {
		return ""
	}
	return NormalizeMAC(firstLineOf(out))
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
