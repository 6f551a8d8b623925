package sshx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/strata-companion/companion/internal/atomicfile"
)

// Fingerprint is the key's SHA256 fingerprint as OpenSSH prints it
// ("SHA256:base64"), what a person compares with `ssh-keygen -lf`.
func Fingerprint(key ssh.PublicKey) string { return ssh.FingerprintSHA256(key) }

// KnownHosts checks host keys against the companion's own known-hosts file
// (locations.KnownHostsFile()), never the user's: the service cannot read the
// user's home and must not trust what the user trusted elsewhere.
type KnownHosts struct {
	// File is the known_hosts file; a missing file knows no host.
	File string
	// Accept is a fingerprint ("SHA256:...") the user explicitly said yes
	// to: an unknown host presenting exactly this key is let in (the caller
	// then Pins it). It never overrides a pinned key that changed.
	Accept string

	mu        sync.Mutex
	presented ssh.PublicKey
	accepted  bool
}

// Callback is the ssh.HostKeyCallback. It reads the file on each call, so a
// pin written meanwhile is seen. Errors are *HostKeyError (wrapping
// *knownhosts.KeyError).
func (k *KnownHosts) Callback(hostname string, remote net.Addr, key ssh.PublicKey) error {
	k.mu.Lock()
	k.presented, k.accepted = key, false
	k.mu.Unlock()
	files := []string{}
	if _, err := os.Stat(k.File); err == nil {
		files = append(files, k.File)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading the companion's known hosts %s: %w", k.File, err)
	}
	cb, err := knownhosts.New(files...)
	if err != nil {
		return fmt.Errorf("the companion's known hosts file %s cannot be read (%v); fix or delete it and pair again", k.File, err)
	}
	err = cb(hostname, remote, key)
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) {
		return err
	}
	hk := &HostKeyError{Host: hostname, Key: key, Fingerprint: Fingerprint(key), File: k.File, keyErr: ke}
	for _, w := range ke.Want {
		hk.Pinned = append(hk.Pinned, Fingerprint(w.Key))
	}
	if hk.Changed() {
		return hk
	}
	if k.Accept != "" {
		if strings.TrimSpace(k.Accept) == hk.Fingerprint {
			k.mu.Lock()
			k.accepted = true
			k.mu.Unlock()
			return nil
		}
		hk.Rejected = k.Accept
	}
	return hk
}

// Presented is the host key the server showed in the last handshake (nil
// before one), for Pin after an explicit yes.
func (k *KnownHosts) Presented() ssh.PublicKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.presented
}

// AcceptedNew reports whether the last handshake let an unknown host in
// because its fingerprint matched Accept: the caller should Pin it.
func (k *KnownHosts) AcceptedNew() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.accepted
}

// Algorithms are the key types pinned for ep (for Config.HostKeyAlgorithms),
// nil when none is pinned. An ssh-rsa pin allows the SHA-2 signatures too.
func (k *KnownHosts) Algorithms(ep Endpoint) []string {
	keys, _ := PinnedKeys(k.File, ep)
	var out []string
	for _, key := range keys {
		out = append(out, HostKeyAlgorithms(key)...)
	}
	return out
}

// HostKeyAlgorithms are the algorithms to ask for so that the server
// presents key: its type, except that an ssh-rsa key is asked for with its
// SHA-2 signatures first (OpenSSH 8.8 and later refuse SHA-1 ssh-rsa).
func HostKeyAlgorithms(key ssh.PublicKey) []string {
	if t := key.Type(); t != ssh.KeyAlgoRSA {
		return []string{t}
	}
	return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
}

// HostKeyError is an unknown or a changed host key. It unwraps to the
// *knownhosts.KeyError (empty Want: unknown; non-empty: changed).
type HostKeyError struct {
	Host        string        // as dialed (host:port)
	Key         ssh.PublicKey // what the server presented
	Fingerprint string        // Fingerprint(Key)
	Pinned      []string      // fingerprints pinned for this host (empty: unknown host)
	Rejected    string        // the fingerprint the user accepted, when it is not this one
	File        string        // the known-hosts file consulted
	keyErr      *knownhosts.KeyError
}

func (e *HostKeyError) Unwrap() error { return e.keyErr }

// Changed reports a pinned host that now presents another key.
func (e *HostKeyError) Changed() bool { return len(e.Pinned) > 0 }

func (e *HostKeyError) Error() string {
	if e.Changed() {
		return fmt.Sprintf("REFUSING TO CONNECT: the host key of %s has CHANGED since it was pinned "+
			"(pinned %s, now %s). This happens when that PC was reinstalled or its ssh server was reset or "+
			"replaced, or when another machine took its address; it can also mean someone is intercepting "+
			"the connection. Check the fingerprint on that PC itself (Linux: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub; "+
			"Windows: ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub); only if it matches and you know "+
			"why it changed, unpair (strata-service remote unpair) and pair again",
			e.Host, strings.Join(e.Pinned, ", "), e.Fingerprint)
	}
	if e.Rejected != "" {
		return fmt.Sprintf("%s presented the host key %s, not the %s you accepted; the connection was refused. "+
			"Check the fingerprint on that PC itself", e.Host, e.Fingerprint, e.Rejected)
	}
	return fmt.Sprintf("%s is not known yet: its host key fingerprint is %s. Check that this is the fingerprint "+
		"that PC shows for itself (Linux: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub; Windows: "+
		"ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub) and accept it explicitly", e.Host, e.Fingerprint)
}

// knownHostsAddr is ep as known_hosts writes it ("host" or "[host]:port").
func knownHostsAddr(ep Endpoint) string { return knownhosts.Normalize(ep.Addr()) }

// Pin records key as ep's host key in file (after the user said yes),
// replacing any key of the same type pinned for ep before. The file is
// written atomically; its folder is created.
func Pin(file string, ep Endpoint, key ssh.PublicKey) error {
	addr := knownHostsAddr(ep)
	lines, err := readLines(file)
	if err != nil {
		return err
	}
	var out []string
	for _, l := range lines {
		if k, ok := lineKey(l, addr); ok && k.Type() == key.Type() {
			continue
		}
		out = append(out, l)
	}
	out = append(out, knownhosts.Line([]string{addr}, key))
	return writeLines(file, out)
}

// Unpin removes every key pinned for ep from file (a missing file is fine).
func Unpin(file string, ep Endpoint) error {
	addr := knownHostsAddr(ep)
	lines, err := readLines(file)
	if err != nil || lines == nil {
		return err
	}
	var out []string
	removed := false
	for _, l := range lines {
		if _, ok := lineKey(l, addr); ok {
			removed = true
			continue
		}
		out = append(out, l)
	}
	if !removed {
		return nil
	}
	return writeLines(file, out)
}

// PinnedKeys are the keys file pins for ep.
func PinnedKeys(file string, ep Endpoint) ([]ssh.PublicKey, error) {
	addr := knownHostsAddr(ep)
	lines, err := readLines(file)
	var out []ssh.PublicKey
	for _, l := range lines {
		if k, ok := lineKey(l, addr); ok {
			out = append(out, k)
		}
	}
	return out, err
}

// lineKey parses one known_hosts line and reports whether it names addr
// exactly (the companion writes plain, unhashed host names).
func lineKey(line, addr string) (ssh.PublicKey, bool) {
	t := strings.TrimSpace(line)
	if t == "" || t[0] == '#' || t[0] == '@' {
		return nil, false
	}
	_, hosts, key, _, _, err := ssh.ParseKnownHosts([]byte(t))
	if err != nil {
		return nil, false
	}
	for _, h := range hosts {
		if h == addr {
			return key, true
		}
	}
	return nil, false
}

func readLines(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

func writeLines(file string, lines []string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(file), err)
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return atomicfile.Write(file, b.Bytes(), 0o644)
}
