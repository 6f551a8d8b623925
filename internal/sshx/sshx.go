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
	if host == "" || strings.ContainsAny(host, " /\\") {
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
	// Auth methods, tried in order (see auth.go helpers).
	Auth []ssh.AuthMethod
	// HostKeyCallback verifies the host key; required (there is no insecure default).
	HostKeyCallback ssh.HostKeyCallback
	// Timeout bounds the TCP connect AND the whole ssh handshake and auth
	// (x/crypto/ssh's own Timeout covers only the connect). Default 10 s.
	Timeout time.Duration
}

// DefaultTimeout bounds connect plus handshake.
const DefaultTimeout = 10 * time.Second

// Dial connects and authenticates within cfg.Timeout (and ctx).
func Dial(ctx context.Context, cfg Config) (*ssh.Client, error) {
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
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := cfg.Endpoint.Addr()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &DialError{Addr: addr, Stage: "connect", Err: err}
	}
	// The deadline covers the handshake; it is lifted once we are in.
	dl, _ := ctx.Deadline()
	conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, &ssh.ClientConfig{
		User:            cfg.Endpoint.User,
		Auth:            cfg.Auth,
		HostKeyCallback: cfg.HostKeyCallback,
		Timeout:         timeout,
	})
	stop()
	if err != nil {
		conn.Close()
		return nil, &DialError{Addr: addr, Stage: "handshake", Err: err}
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

// DialError says which stage failed; Error() is written for a person.
type DialError struct {
	Addr  string
	Stage string // connect, handshake
	Err   error
}

func (e *DialError) Unwrap() error { return e.Err }

func (e *DialError) Error() string {
	var ne net.Error
	switch {
	case errors.As(e.Err, &ne) && ne.Timeout(), errors.Is(e.Err, context.DeadlineExceeded):
		if e.Stage == "connect" {
			return fmt.Sprintf("%s did not answer (connection timed out); check that the PC is on and the address is right", e.Addr)
		}
		return fmt.Sprintf("%s accepted the connection but did not complete an ssh handshake in time; is an ssh server listening on that port?", e.Addr)
	case e.Stage == "connect":
		return fmt.Sprintf("could not connect to %s: %v; check that the PC is on and its ssh server runs", e.Addr, e.Err)
	default:
		return fmt.Sprintf("ssh to %s failed: %v", e.Addr, e.Err)
	}
}
