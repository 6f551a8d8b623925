package lender

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/asowner"
	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/pairing"
)

// Serve answers pairings on the record's pairing port and announces this
// PC until ctx ends; then it withdraws the announcement and returns. Ending
// it revokes nothing: paired PCs keep reading pictures through ssh.
// ready, when set, hears the listening address once the port is open.
func Serve(ctx context.Context, o Options, ready func(addr string)) error {
	if err := o.defaults(); err != nil {
		return err
	}
	r, err := Load()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(r.PairPort)))
	if err != nil {
		return fmt.Errorf("the pairing port %d is taken (%v): is another lender running? (`strata-service lend status`)", r.PairPort, err)
	}
	defer ln.Close()
	if ready != nil {
		ready(ln.Addr().String())
	}
	if o.Announce != nil {
		fp := ""
		if addr, ok := sshAnswers(r.SSHPort); ok {
			if k, err := pairing.PresentedKey(ctx, addr, 10*time.Second); err == nil {
				fp = ssh.FingerprintSHA256(k)
			}
		}
		withdraw, err := o.Announce(ctx, lend.Announcement{Name: r.Name, Port: r.SSHPort, PairPort: r.PairPort, GPUs: o.GPUs,
			AgentVersion: o.Version, HostKey: fp, OS: runtime.GOOS})
		if err != nil {
			o.Progress("not announced on the network (" + err.Error() + "): the other PC can still pair by this PC's address")
		} else {
			defer withdraw()
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			err := lend.Serve(ctx, conn, fileBook{ctx}, func(ctx context.Context, req lend.Request) (*lend.Grant, error) {
				rec, err := Load()
				if err != nil {
					return nil, err
				}
				g, err := grant(ctx, rec, conn.LocalAddr(), req)
				if err == nil {
					o.Progress(fmt.Sprintf("paired with %s (%s): it may now read pictures on this PC's GPU", req.From, conn.RemoteAddr()))
				}
				return g, err
			})
			if err != nil {
				o.Progress(fmt.Sprintf("a pairing from %s did not complete: %v", conn.RemoteAddr(), err))
			}
		}()
	}
}

// StopReport says what Stop undid.
type StopReport struct {
	KeysRemoved []string
	Ended       int
	Undone      []Step
}

// ErrStopNeedsAdmin: lend stop runs without the rights it needs.
var ErrStopNeedsAdmin = errors.New("stopping lending changes the ssh server and another account's files: run it as root (sudo strata-service lend stop), or from an administrator's window on Windows")

// Stop ends lending: the paired PCs' keys out (every other line byte for
// byte), the lent agent and its encoder ended now, the agent folder gone,
// the firewall rule and the ssh server as they were before lend.
func Stop(ctx context.Context, o Options) (*StopReport, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if !account.Privileged() {
		return nil, ErrStopNeedsAdmin
	}
	r, err := Load()
	if err != nil {
		return nil, err
	}
	acct, err := account.Lookup(r.User)
	if err != nil {
		return nil, err
	}
	rep := &StopReport{}
	var errs []error
	for _, p := range r.Paired {
		if _, err := agentKeys(ctx, acct, r.AgentDir, nil, "remove", "--comment", p.Comment, "--key", p.Key, "--file", r.KeysFile); err != nil {
			errs = append(errs, fmt.Errorf("removing %s's key from %s: %w", p.From, r.KeysFile, err))
			continue
		}
		rep.KeysRemoved = append(rep.KeysRemoved, p.From)
	}
	if len(errs) > 0 {
		// Keep the agent (it removes the keys) and the record: stop again.
		return rep, errors.Join(append(errs, errors.New("nothing else was undone; fix that and run lend stop again"))...)
	}
	rep.Ended = endAgents(ctx, o, acct, r.AgentDir)
	removeShown(ctx, acct)
	if r.AgentDir != "" && filepath.Base(r.AgentDir) == "strata-companion" {
		if runtime.GOOS == "windows" {
			err = os.RemoveAll(r.AgentDir)
		} else {
			out, cerr := asowner.Command(ctx, acct, "/", nil, "rm", "-rf", "--", r.AgentDir).CombinedOutput()
			if cerr != nil {
				err = fmt.Errorf("%v: %s", cerr, strings.TrimSpace(string(out)))
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", r.AgentDir, err))
		}
	}
	for _, s := range UndoPlan(runtime.GOOS, r)[3:] {
		o.Progress(s.Say)
		if out, err := o.Run(ctx, s.Argv); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v: %s", strings.Join(s.Argv, " "), err, strings.TrimSpace(string(out))))
			continue
		}
		rep.Undone = append(rep.Undone, s)
	}
	if err := os.Remove(RecordFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// Describe is lend status in words.
func Describe(r *Record, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This PC (%s) lends its GPU for the account %s.\n", r.Name, r.User)
	switch {
	case r.SSHServer == "kept":
		fmt.Fprintf(&b, "  ssh server: one answered on port %d before lending; left exactly as it was\n", r.SSHPort)
	case r.SSHEnabled:
		fmt.Fprintf(&b, "  ssh server: %s, started and enabled by lend (lend stop turns it off again)\n", r.SSHServer)
	}
	if r.FirewallRule != "" {
		fmt.Fprintf(&b, "  firewall: the rule %q (Private profile, local subnet), added by lend\n", r.FirewallRule)
	}
	fmt.Fprintf(&b, "  agent: %s\n", r.AgentDir)
	if code, err := r.Code.Valid(now); err == nil {
		fmt.Fprintf(&b, "  pairing code: %s, valid until %s, %d wrong tries left\n", code, r.Code.Expires.Local().Format("15:04:05"), r.Code.TriesLeft)
	} else {
		fmt.Fprintf(&b, "  pairing code: none valid (`strata-service lend code` makes one)\n")
	}
	if len(r.Paired) == 0 {
		b.WriteString("  paired: none yet\n")
	}
	for _, p := range r.Paired {
		fmt.Fprintf(&b, "  paired: %s since %s\n", p.From, p.When.Local().Format("2006-01-02 15:04"))
	}
	return b.String()
}
