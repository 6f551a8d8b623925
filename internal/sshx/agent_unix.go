//go:build !windows

package sshx

import (
	"fmt"
	"io"
	"net"
	"os"
)

// dialAgent connects to the agent socket named by SSH_AUTH_SOCK.
func dialAgent() (io.ReadWriteCloser, error) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, ErrNoAgent
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("%w (SSH_AUTH_SOCK=%s: %v)", ErrNoAgent, sock, err)
	}
	return c, nil
}
