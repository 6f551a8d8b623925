package sshx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// errGotKey ends the handshake once the host key is seen.
var errGotKey = errors.New("host key seen")

// CheckHostKey connects to ep and checks that the key it presents is want
// (authorized_keys form): the service's own look at a host key a caller
// names, so a record cannot pin a key the host does not have. Only the key
// exchange runs; nothing logs in.
func CheckHostKey(ctx context.Context, ep Endpoint, want string, timeout time.Duration) error {
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(want))
	if err != nil {
		return fmt.Errorf("the host key %q is not in authorized_keys form: %v", want, err)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", ep.Addr())
	if err != nil {
		return fmt.Errorf("cannot reach %s to check its host key: %w", ep.Addr(), err)
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	var got ssh.PublicKey
	_, _, _, err = ssh.NewClientConn(nc, ep.Addr(), &ssh.ClientConfig{
		User:              "strata-companion-hostkey-check",
		HostKeyAlgorithms: HostKeyAlgorithms(key),
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			got = k
			return errGotKey
		},
	})
	if got == nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s did not show its host key within %s", ep.Addr(), timeout)
		}
		return fmt.Errorf("%s did not show its host key: %v", ep.Addr(), err)
	}
	if !bytes.Equal(got.Marshal(), key.Marshal()) {
		return fmt.Errorf("%s presents the host key %s, not the %s the record names", ep.Addr(), Fingerprint(got), Fingerprint(key))
	}
	return nil
}
