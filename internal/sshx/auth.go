package sshx

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// ErrNoAgent says no ssh-agent is reachable (none running, or on Unix
// SSH_AUTH_SOCK unset): not a failure, just one way to log in fewer.
var ErrNoAgent = errors.New("no ssh-agent is running")

// AgentAuth logs in with the keys of the user's ssh-agent (Unix: the socket
// in SSH_AUTH_SOCK; Windows: the OpenSSH agent's named pipe). Close the
// returned closer when the connection is made.
func AgentAuth() (ssh.AuthMethod, io.Closer, error) {
	conn, err := dialAgent()
	if err != nil {
		return nil, nil, err
	}
	client := agent.NewClient(conn)
	return ssh.PublicKeysCallback(client.Signers), conn, nil
}

// ErrPassphraseNeeded is wrapped by LoadSigner's error for an encrypted key
// when no passphrase can be asked.
var ErrPassphraseNeeded = errors.New("the key is protected by a passphrase")

// Passphrase asks a person for the passphrase of the key file at path.
type Passphrase func(path string) ([]byte, error)

// LoadSigner reads a private key file (OpenSSH, PEM or PKCS#8). An encrypted
// key asks ask for its passphrase (once; a wrong one is an error that says
// so); with ask nil an encrypted key is an error.
func LoadSigner(path string, ask Passphrase) (ssh.Signer, error) {
	b, err := readKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the key file %s: %w", path, err)
	}
	defer clear(b)
	signer, err := ssh.ParsePrivateKey(b)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if ask == nil {
			return nil, fmt.Errorf("%w, and none can be asked here (%s); add the key to your ssh-agent instead", ErrPassphraseNeeded, path)
		}
		pass, aerr := ask(path)
		if aerr != nil {
			return nil, fmt.Errorf("reading the passphrase for %s: %w", path, aerr)
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase(b, pass)
		clear(pass)
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, fmt.Errorf("wrong passphrase for the key file %s", path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the key file %s is not a private key ssh can use: %v", path, err)
	}
	return signer, nil
}

// KeyFileAuth logs in with the key in path (see LoadSigner).
func KeyFileAuth(path string, ask Passphrase) (ssh.AuthMethod, error) {
	s, err := LoadSigner(path, ask)
	if err != nil {
		return nil, err
	}
	return ssh.PublicKeys(s), nil
}

// passwordMethods answers both a "password" login (Windows OpenSSH, sshd
// without PAM) and a keyboard-interactive password prompt (PAM), asking the
// person once. wait(true) is called before asking and wait(false) after, so
// Dial can lift its deadline meanwhile.
func passwordMethods(ask func() (string, error), wait func(bool)) []ssh.AuthMethod {
	var (
		mu     sync.Mutex
		asked  bool
		pw     string
		askErr error
	)
	get := func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if !asked {
			asked = true
			wait(true)
			pw, askErr = ask()
			wait(false)
		}
		return pw, askErr
	}
	return []ssh.AuthMethod{
		ssh.PasswordCallback(get),
		ssh.KeyboardInteractive(func(name, instruction string, questions []string, echos []bool) ([]string, error) {
			answers := make([]string, len(questions))
			for i, q := range questions {
				if echos[i] || !strings.Contains(strings.ToLower(q), "password") {
					// Not a password question (2FA, a menu): we cannot answer it.
					return nil, fmt.Errorf("the server asks %q, which this program cannot answer; use a key instead", strings.TrimSpace(q))
				}
				p, err := get()
				if err != nil {
					return nil, err
				}
				answers[i] = p
			}
			return answers, nil
		}),
	}
}

// UserAuth is how a person logs in with their own credentials (probe,
// pairing): their ssh-agent, then key files, then a password. The relay
// never uses it: it logs in with the companion's own key only.
type UserAuth struct {
	// IdentityFiles are tried after the agent's keys; a file that cannot be
	// loaded is an error (the user named it, or their ssh config did).
	IdentityFiles []string
	// NoAgent skips the ssh-agent.
	NoAgent bool
	// Passphrase asks for an encrypted key's passphrase (nil: such keys fail).
	Passphrase Passphrase
}

// Methods builds the auth methods. Call closeFn once the dial is over.
func (u UserAuth) Methods() (methods []ssh.AuthMethod, closeFn func(), err error) {
	closeFn = func() {}
	var agentSigners func() ([]ssh.Signer, error)
	if !u.NoAgent {
		if conn, derr := dialAgent(); derr == nil {
			closeFn = func() { conn.Close() }
			agentSigners = agent.NewClient(conn).Signers
		}
	}
	var files []ssh.Signer
	for _, f := range u.IdentityFiles {
		s, lerr := LoadSigner(f, u.Passphrase)
		if lerr != nil {
			closeFn()
			return nil, func() {}, lerr
		}
		files = append(files, s)
	}
	if agentSigners == nil && len(files) == 0 {
		return nil, closeFn, nil
	}
	// One publickey method offering every key: x/crypto tries each method
	// only once, and the server counts keys, not methods.
	methods = append(methods, ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
		var all []ssh.Signer
		if agentSigners != nil {
			if s, err := agentSigners(); err == nil {
				all = append(all, s...)
			}
		}
		return append(all, files...), nil
	}))
	return methods, closeFn, nil
}
