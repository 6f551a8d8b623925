// Package sshx is the companion's ssh layer: where the second PC is, dialing
// it with hard deadlines, verifying its host key against the companion's own
// known-hosts file, and the auth methods. The relay, the probes and pairing
// all dial through here.
package sshx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Endpoint is [user@]host[:port].
type Endpoint struct {
	User string
	Host string
	Port int
}

// ParseEndpoint reads "[user@]host[:port]" (IPv6 hosts in brackets).
func ParseEndpoint(s string) (Endpoint, error) {
	s = strings.TrimSpace(s)
	var e Endpoint
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		e.User, s = s[:i], s[i+1:]
		if e.User == "" {
			return e, fmt.Errorf("%q: the user name before @ is empty", s)
		}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = strings.Trim(s, "[]"), ""
	}
	if !validHost(host) {
		return e, fmt.Errorf("%q is not a host name or address; write it as [user@]host[:port]", s)
	}
	e.Host = host
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return e, fmt.Errorf("%q is not a port number (1-65535)", port)
		}
		e.Port = p
	}
	return e, nil
}

// validHost accepts a DNS name, an IPv4 address, or an IPv6 address (with a
// zone): nothing that could be taken for a port, a path or an option.
func validHost(h string) bool {
	if h == "" || h[0] == '-' {
		return false
	}
	if strings.Contains(h, ":") {
		ip := h
		if i := strings.IndexByte(ip, '%'); i > 0 {
			ip = ip[:i]
		}
		return net.ParseIP(ip) != nil
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

// Addr is host:port, with the default port 22.
func (e Endpoint) Addr() string {
	p := e.Port
	if p == 0 {
		p = 22
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(p))
}

func (e Endpoint) String() string {
	s := e.Host
	if e.Port != 0 && e.Port != 22 {
		s = e.Addr()
	}
	if e.User != "" {
		s = e.User + "@" + s
	}
	return s
}

// Config says how to dial.
type Config struct {
	Endpoint Endpoint
	// Auth methods, tried in order (see auth.go helpers). x/crypto/ssh tries
	// each method name once: put every key in ONE publickey method
	// (UserAuth.Methods does), or the second one is never offered.
	Auth []ssh.AuthMethod
	// Password, when set, is asked for after the Auth methods, only if the
	// server wants a password; it is asked once and also answers a
	// keyboard-interactive password prompt (PAM). The deadline is lifted
	// while it waits for a person and restarts when it returns.
	Password func() (string, error)
	// HostKeyCallback verifies the host key; required (there is no insecure
	// default). KnownHosts.Callback gives one.
	HostKeyCallback ssh.HostKeyCallback
	// HostKeyAlgorithms, when set, are the host key types to ask for (the
	// pinned key's type: KnownHosts.Algorithms), so a server with several
	// host keys presents the one that was pinned.
	HostKeyAlgorithms []string
	// Timeout bounds the TCP connect AND the whole ssh handshake and auth
	// (x/crypto/ssh's own Timeout covers only the connect). Default 10 s.
	Timeout time.Duration
}

// DefaultTimeout bounds connect plus handshake: long enough for a Windows
// PC's OpenSSH on a busy Wi-Fi, short enough that a dead address is reported
// while the user still looks at the screen.
const DefaultTimeout = 10 * time.Second

// Ciphers is the client's cipher preference, fastest first: AES-GCM is
// hardware-accelerated on every x86-64 and arm64 the product targets (AES-NI
// and PCLMULQDQ / ARMv8 crypto) and costs the fewest CPU cycles per byte of a
// picture or .sve; chacha20-poly1305 is next (fast without AES hardware);
// the CTR modes only for old servers. Pinned here so a change of
// x/crypto's defaults cannot slow the relay down unnoticed.
var Ciphers = []string{ssh.CipherAES128GCM, ssh.CipherChaCha20Poly1305, ssh.CipherAES256GCM,
	ssh.CipherAES128CTR, ssh.CipherAES192CTR, ssh.CipherAES256CTR}

// Dial connects and authenticates within cfg.Timeout (and ctx). Errors are
// *DialError; Classify says why in one word.
func Dial(ctx context.Context, cfg Config) (*ssh.Client, error) {
	c, err := DialClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c.Client, nil
}

// Client is a dialed connection with a say in how its socket is read.
type Client struct {
	*ssh.Client
	pc *packetConn // nil where the socket is not a Linux TCP socket
}

// ExpectIncoming promises that a peer has announced n more bytes of one
// channel's data and is streaming them. x/crypto/ssh may already have read
// up to channelReadAhead of them into the channel, so what is certain to
// arrive on the socket is n less that; until it has come, a read waits for
// a batch of it instead of waking for every ssh packet (Linux; see
// lowat_linux.go). A broken promise costs one 250 ms wait, never data.
// n <= channelReadAhead promises nothing (and withdraws a promise).
func (c *Client) ExpectIncoming(n int64) {
	if c.pc != nil {
		c.pc.expect(n - channelReadAhead)
	}
}

// channelReadAhead is the most x/crypto/ssh reads of one channel before its
// reader takes it: the window it grants the peer (64 packets of 32 KiB,
// channelWindowSize in its channel.go). TestExpectIncomingOverARealSSHDIntegration
// fails should a newer x/crypto grant more.
const channelReadAhead = 64 * (32 << 10)

// DialClient is Dial, returning a Client.
func DialClient(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.HostKeyCallback == nil {
		return nil, errors.New("sshx: no host key check configured")
	}
	if cfg.Endpoint.User == "" {
		return nil, fmt.Errorf("no user name for %s; write it as user@%s", cfg.Endpoint.Host, cfg.Endpoint.Host)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	addr := cfg.Endpoint.Addr()
	derr := func(stage string, err error) error {
		return &DialError{Addr: addr, User: cfg.Endpoint.User, Stage: stage, Err: err}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	var d net.Dialer
	conn, err := d.DialContext(cctx, "tcp", addr)
	cancel()
	if err != nil {
		return nil, derr("connect", err)
	}
	pc, conn := newPacketConn(conn)
	// The handshake gets its own full budget (a deadline on the socket), which
	// is lifted while a password prompt waits for a person; ctx still ends it.
	conn.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	auth := append([]ssh.AuthMethod{}, cfg.Auth...)
	if cfg.Password != nil {
		auth = append(auth, passwordMethods(cfg.Password, func(waiting bool) {
			if ctx.Err() != nil {
				return
			}
			if waiting {
				conn.SetDeadline(time.Time{})
			} else {
				conn.SetDeadline(time.Now().Add(timeout))
			}
		})...)
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, &ssh.ClientConfig{
		User:              cfg.Endpoint.User,
		Auth:              auth,
		HostKeyCallback:   cfg.HostKeyCallback,
		HostKeyAlgorithms: cfg.HostKeyAlgorithms,
		Timeout:           timeout,
		Config:            ssh.Config{Ciphers: Ciphers},
	})
	stopped := stop()
	if err != nil {
		conn.Close()
		if !stopped && ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, derr("handshake", err)
	}
	conn.SetDeadline(time.Time{})
	if pc != nil {
		pc.start()
	}
	return &Client{Client: ssh.NewClient(c, chans, reqs), pc: pc}, nil
}
