package sshx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"syscall"

	"golang.org/x/crypto/ssh/knownhosts"
)

// Reason says in a word why a dial failed; the probe reports it, the relay
// turns it into an event, the wizard picks its advice by it.
type Reason string

const (
	ReasonNone           Reason = ""
	ReasonRefused        Reason = "refused"          // nothing listens on that port
	ReasonTimedOut       Reason = "timed out"        // no answer, or no ssh greeting in time
	ReasonNoRoute        Reason = "no route"         // the network cannot reach the address
	ReasonNoSuchHost     Reason = "unknown host"     // the name does not resolve
	ReasonNotSSH         Reason = "not ssh"          // something answered, but not an ssh server
	ReasonClosed         Reason = "closed"           // the server hung up during the handshake
	ReasonAuthFailed     Reason = "auth failed"      // the login was refused
	ReasonHostKeyUnknown Reason = "host key unknown" // first contact: needs an explicit yes
	ReasonHostKeyChanged Reason = "host key changed" // hard stop
	ReasonCanceled       Reason = "canceled"
	ReasonOther          Reason = "failed"
)

// Classify says why err (from Dial, or anything wrapping its error) happened.
func Classify(err error) Reason {
	if err == nil {
		return ReasonNone
	}
	var hk *HostKeyError
	if errors.As(err, &hk) {
		if hk.Changed() {
			return ReasonHostKeyChanged
		}
		return ReasonHostKeyUnknown
	}
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) {
		if len(ke.Want) > 0 {
			return ReasonHostKeyChanged
		}
		return ReasonHostKeyUnknown
	}
	// Judge by the cause, not by DialError's own wording.
	var de *DialError
	if errors.As(err, &de) && de.Err != nil {
		err = de.Err
	}
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, syscall.ETIMEDOUT):
		return ReasonTimedOut
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonRefused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return ReasonNoRoute
	case errors.As(err, &dnsErr):
		return ReasonNoSuchHost
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "unable to authenticate"), strings.Contains(msg, "no supported methods remain"):
		return ReasonAuthFailed
	case strings.Contains(msg, "ssh: overflow reading version string"),
		strings.Contains(msg, "ssh: no key found"), strings.Contains(msg, "version string"):
		return ReasonNotSSH
	case errors.Is(err, syscall.ECONNRESET), strings.Contains(msg, "EOF"):
		// Reset or closed mid-handshake: a firewall, sshd's MaxStartups, a
		// login that was cut off, or a service that is not sshd.
		return ReasonClosed
	}
	return ReasonOther
}

// DialError says which stage failed; Error() is written for a person.
type DialError struct {
	Addr  string
	User  string
	Stage string // connect, handshake
	Err   error
}

func (e *DialError) Unwrap() error { return e.Err }

// Reason is Classify(e).
func (e *DialError) Reason() Reason { return Classify(e) }

var attemptedRE = regexp.MustCompile(`attempted methods \[([^\]]*)\]`)

// TriedMethods lists the auth methods the client tried (from x/crypto/ssh's
// message), without the "none" probe every client sends first.
func TriedMethods(err error) []string {
	var de *DialError
	if errors.As(err, &de) && de.Err != nil {
		err = de.Err
	}
	m := attemptedRE.FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		return nil
	}
	var out []string
	for _, f := range strings.Fields(m[1]) {
		if f != "none" {
			out = append(out, f)
		}
	}
	return out
}

func (e *DialError) Error() string {
	var hk *HostKeyError
	if errors.As(e.Err, &hk) {
		return hk.Error()
	}
	switch Classify(e.Err) {
	case ReasonCanceled:
		return fmt.Sprintf("connecting to %s was canceled", e.Addr)
	case ReasonTimedOut:
		if e.Stage == "connect" {
			return fmt.Sprintf("%s did not answer (connection timed out); check that the PC is on, awake and on the same network, and that the address is right", e.Addr)
		}
		return fmt.Sprintf("%s accepted the connection but did not complete an ssh handshake in time; is an ssh server listening on that port?", e.Addr)
	case ReasonRefused:
		return fmt.Sprintf("%s refused the connection: nothing listens on that port; check the port and that the ssh server (Linux: sshd; Windows: the \"OpenSSH SSH Server\" service) runs on that PC", e.Addr)
	case ReasonNoRoute:
		return fmt.Sprintf("no route to %s (%v); check the address and that both PCs are on the same network", e.Addr, rootCause(e.Err))
	case ReasonNoSuchHost:
		return fmt.Sprintf("cannot find the PC named in %s (the name does not resolve); use its IP address or check the name", e.Addr)
	case ReasonNotSSH:
		return fmt.Sprintf("%s answered, but not as an ssh server (%v); check the port", e.Addr, rootCause(e.Err))
	case ReasonClosed:
		return fmt.Sprintf("%s closed the connection during the ssh handshake (%v); a firewall, the server's connection limit, or a service that is not ssh may be the cause", e.Addr, rootCause(e.Err))
	case ReasonAuthFailed:
		tried := TriedMethods(e.Err)
		how := "no key, agent or password was available to try"
		if len(tried) > 0 {
			how = "tried: " + strings.Join(tried, ", ")
		}
		return fmt.Sprintf("%s refused the login as %q (%s); check the user name, and the key or password", e.Addr, e.User, how)
	}
	if e.Stage == "connect" {
		return fmt.Sprintf("could not connect to %s: %v; check that the PC is on and its ssh server runs", e.Addr, e.Err)
	}
	return fmt.Sprintf("ssh to %s failed: %v", e.Addr, e.Err)
}

// rootCause is the innermost error's text (without the op/addr prefixes
// net.OpError repeats).
func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
