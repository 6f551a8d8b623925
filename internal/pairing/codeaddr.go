package pairing

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/lend"
)

// ParseCodeAddress reads a lender's address as a person types it (the
// command line's NAME|HOST[:PORT], the setup window's "Its address"): a
// name or IP address, with the pairing port after it when it is not the
// usual one (port 0: none given).
func ParseCodeAddress(s string) (host string, port int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", 0, errors.New("no address: type the other PC's name or IP address")
	}
	host = s
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return "", 0, fmt.Errorf("%q: the port must be a number (the lender's pairing port, usually %d)", s, lend.DefaultPairPort)
		}
		host, port = h, n
	}
	if host == "" {
		return "", 0, fmt.Errorf("%q has a port but no name or IP address", s)
	}
	return host, port, nil
}
