package pairing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/sshx"
)

// CodeTarget is a lender to pair with by code: found on the network (its
// announced host key fingerprint set) or typed by hand (HostKey "").
type CodeTarget struct {
	Name     string
	Host     string
	PairPort int
	SSHPort  int    // 0: not known (typed by hand)
	HostKey  string // "SHA256:..." as announced; "" when typed by hand
}

func (t CodeTarget) String() string {
	if t.Name != "" && t.Name != t.Host {
		return t.Name + " (" + t.Host + ")"
	}
	return t.Host
}

// CodeOptions for PairWithCode. Zero values take the companion's usual places.
type CodeOptions struct {
	Code lend.Code
	// Targets are tried in order until one proves it knows the code (an
	// impostor announcing the same name is skipped, and told apart).
	Targets    []CodeTarget
	KeyFile    string // default locations.RelayKeyFile()
	KnownHosts string // default locations.KnownHostsFile()
	Comment    string // default DefaultComment()
	Recorder   Recorder
	// Allow and Encoder are pinned in the gate, as Options.AllowInstall
	// and Options.Encoder.
	Allow   []string
	Encoder string
	Timeout time.Duration
	// Progress, when set, is told each step in words.
	Progress func(string)
}

// PairWithCode pairs with a lender using only its pairing code: no
// password, no key, no fingerprint question. The result is the same
// agent-only pairing as Pair's: the key forced to the agent's gate, the
// host key pinned, the second PC recorded.
func PairWithCode(ctx context.Context, o CodeOptions) (*Result, error) {
	if o.Recorder == nil {
		return nil, errors.New("pairing.CodeOptions.Recorder is nil: nothing would record the second PC")
	}
	if o.KeyFile == "" {
		o.KeyFile = locations.RelayKeyFile()
	}
	if o.KnownHosts == "" {
		o.KnownHosts = locations.KnownHostsFile()
	}
	if o.Comment == "" {
		o.Comment = DefaultComment()
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Timeout <= 0 {
		o.Timeout = sshx.DefaultTimeout
	}
	if len(o.Targets) == 0 {
		return nil, errors.New("no PC to pair with: name one found by `strata-service remote find`, or type its address")
	}
	if err := CheckGatePins(o.Allow, o.Encoder); err != nil {
		return nil, err
	}
	signer, created, err := loadOrCreateKey(o.KeyFile, o.Comment)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Result, error) {
		if created {
			os.Remove(o.KeyFile)
		}
		return nil, err
	}
	host, _ := os.Hostname()
	req := lend.Request{PublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))), Comment: o.Comment,
		From: host, Allow: o.Allow, Encoder: o.Encoder}
	var reasons []string
	var refusal error
	for _, t := range o.Targets {
		g, hk, err := tryTarget(ctx, o, t, req)
		if err != nil {
			var r *lend.RefusedError
			if errors.As(err, &r) && refusal == nil {
				refusal = err
			}
			reasons = append(reasons, t.String()+": "+err.Error())
			continue
		}
		ep := sshx.Endpoint{User: g.User, Host: t.Host, Port: g.Port}
		o.Progress("checking that the companion's key logs in on its own")
		if err := prove(ctx, ep, signer, hk, o.Timeout, false, g.AgentDir, g.OS); err != nil {
			return fail(fmt.Errorf("%s accepted the code and the key, but logging in with it failed (%v): on that PC, run `strata-service lend status`", t, err))
		}
		o.Progress("pinning the host key and saving the settings")
		if err := sshx.Pin(o.KnownHosts, ep, hk); err != nil {
			return fail(err)
		}
		r := settings.Remote{Host: ep.Host, Port: ep.Port, User: ep.User, KeyFile: o.KeyFile,
			HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hk))), OS: g.OS, Arch: g.Arch, MAC: g.MAC, RemoteDir: g.AgentDir}
		if err := o.Recorder.RecordPairing(ctx, r); err != nil {
			return fail(err)
		}
		return &Result{Remote: r, KeyCreated: created, Installed: g.KeysFile, OS: g.OS, Arch: g.Arch, Allowed: o.Allow}, nil
	}
	if created {
		os.Remove(o.KeyFile)
	}
	if refusal != nil && len(o.Targets) == 1 {
		return nil, refusal
	}
	return nil, fmt.Errorf("no PC paired; nothing was changed here or there:\n  %s", strings.Join(reasons, "\n  "))
}

// tryTarget runs the exchange with one lender. A lender found on the
// network must first show the host key it announced: one that shows
// another is refused before anything is sent.
func tryTarget(ctx context.Context, o CodeOptions, t CodeTarget, req lend.Request) (*lend.Grant, ssh.PublicKey, error) {
	if t.HostKey != "" && t.SSHPort != 0 {
		o.Progress("checking " + t.String() + "'s host key against its announcement")
		seen, err := PresentedKey(ctx, net.JoinHostPort(t.Host, strconv.Itoa(t.SSHPort)), o.Timeout)
		if err != nil {
			return nil, nil, fmt.Errorf("its ssh server does not answer (%v)", err)
		}
		if fp := ssh.FingerprintSHA256(seen); fp != t.HostKey {
			return nil, nil, fmt.Errorf("it answers with another host key (%s) than it announced (%s): not trusted, nothing sent", fp, t.HostKey)
		}
	}
	port := t.PairPort
	if port == 0 {
		port = lend.DefaultPairPort
	}
	o.Progress("pairing with " + t.String() + " using the code")
	d := net.Dialer{Timeout: o.Timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(t.Host, strconv.Itoa(port)))
	if err != nil {
		return nil, nil, fmt.Errorf("it does not answer on the pairing port %d (%v): is it lending? (on that PC: strata-service lend)", port, err)
	}
	defer conn.Close()
	g, err := lend.Pair(ctx, conn, o.Code, req)
	if err != nil {
		return nil, nil, err
	}
	hk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(g.HostKey))
	if err != nil {
		return nil, nil, fmt.Errorf("its host key is unreadable (%v)", err)
	}
	if t.HostKey != "" && ssh.FingerprintSHA256(hk) != t.HostKey {
		return nil, nil, fmt.Errorf("it granted a host key (%s) other than the one it announced (%s): not trusted", ssh.FingerprintSHA256(hk), t.HostKey)
	}
	if g.User == "" || g.Port <= 0 || g.AgentDir == "" || (g.OS != "linux" && g.OS != "windows" && g.OS != "darwin") {
		return nil, nil, fmt.Errorf("its grant is incomplete (%+v)", *g)
	}
	return g, hk, nil
}

// PresentedKey is the host key the ssh server at addr shows (nothing is
// authenticated or sent but the handshake): what this PC checks against an
// announcement, and what the lender grants (the same key the other PC sees).
func PresentedKey(ctx context.Context, addr string, timeout time.Duration) (ssh.PublicKey, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	var got ssh.PublicKey
	ssh.NewClientConn(c, addr, &ssh.ClientConfig{User: "strata-companion", Timeout: timeout,
		HostKeyAlgorithms: []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256},
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			got = k
			return errors.New("host key read")
		}})
	if got == nil {
		return nil, errors.New("no host key shown")
	}
	return got, nil
}
