//go:build windows

package sshx

import (
	"fmt"
	"io"
	"os"
)

// openSSHAgentPipe is the named pipe of Windows' own OpenSSH agent (the
// "OpenSSH Authentication Agent" service). SSH_AUTH_SOCK may name another
// pipe (e.g. a password manager's agent), as Windows' ssh.exe allows.
const openSSHAgentPipe = `\\.\pipe\openssh-ssh-agent`

// dialAgent opens the agent's named pipe. A named pipe opens like a file on
// Windows, so no extra library is needed; the agent protocol is request and
// reply, which a plain *os.File carries.
func dialAgent() (io.ReadWriteCloser, error) {
	pipe := os.Getenv("SSH_AUTH_SOCK")
	if pipe == "" {
		pipe = openSSHAgentPipe
	}
	f, err := os.OpenFile(pipe, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (%s: %v; start the \"OpenSSH Authentication Agent\" service and ssh-add your key)", ErrNoAgent, pipe, err)
	}
	return f, nil
}
