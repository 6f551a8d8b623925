// Package controlserver serves the control API (docs/control-api.md) on
// loopback: the tray, the wizard and the CLI read the state, follow events
// and ask for changes through it. The JSON types are internal/controlapi's.
//
// Four checks guard every request, in this order: the peer must be on this
// machine (403), the Host header must be a local name (403: a web page in a
// browser on this PC cannot reach us through DNS rebinding), the bearer
// token must be one of the server's (401), and the token's role must allow
// the request (403, see authorize): reading is for every local account,
// changing anything for the install's owner and the administrators, and
// the relay's token may only report the relay's events.
package controlserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	pathpkg "path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/atomicfile"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
)

// Backend is everything the server needs: the owner it serves (every
// route of controlapi's table calls the Owner method of the same name),
// the event bus, and the relay's road in.
type Backend struct {
	Bus   *events.Bus
	Owner controlapi.Owner
	// Relay takes POST /v1/relay (what the relay learned or did); nil:
	// relay reports are not taken (501).
	Relay func(ctx context.Context, r controlapi.RelayReport) error
	// RelayStarted, when set, says whether secret is the one the service
	// handed the Strata it runs now (controlapi.EnvRelaySecret): a report
	// with the relay token and another secret (a relay started by hand, or
	// by a Strata the service did not start) is refused.
	RelayStarted func(secret string) bool
}

// Role is what a caller's token allows.
type Role int

const (
	// RoleNone: no valid token (401).
	RoleNone Role = iota
	// RoleReader reads the state and follows events: every local account
	// (the read token's file is world-readable).
	RoleReader
	// RoleRelay may also report the relay's own events (POST /v1/relay):
	// the relay, which runs as the account that runs Strata's server.
	RoleRelay
	// RoleOperator may change everything: the install's owner and the
	// administrators (the operator token's file admits only them).
	RoleOperator
)

// Server is the HTTP side of the control API.
type Server struct {
	b Backend
	// token is the operator's; readToken and relayToken the others'.
	token, readToken, relayToken string
	// Owner names the install's owner for the 403's sentence ("ann (the
	// Strata install's owner) and the administrators"); "" when the install
	// is an administrator's (or there is none): "the administrators".
	Owner     string
	ownerMu   sync.Mutex
	relayRate rate
	filesMu   sync.Mutex
	files     Files
	// MaxWait caps /v1/events?wait= (default 10 min: a loopback client that
	// asks again only when something happens costs the idle tray nothing).
	MaxWait time.Duration
	// Timeouts bound what a connection may hold without sending a whole,
	// authorised request (defaults: DefaultTimeouts). Set before Serve.
	Timeouts Timeouts
	// Limits bound what accounts other than the owner and the
	// administrators may hold (default: DefaultLimits; limits.go).
	Limits  Limits
	limOnce sync.Once
	limits  *limiter
}

// Timeouts bound a connection's time at each step. A connection that does
// not send its headers within Header, its body within Body, or a next
// request within Idle is closed; a refused (401/403) request closes its
// connection at once. There is no write timeout: /v1/events long-polls.
type Timeouts struct {
	Header time.Duration // the request line and headers
	Body   time.Duration // the body, counted from the end of the headers
	Idle   time.Duration // between requests on a kept-alive connection
}

// DefaultTimeouts are generous for a client on this machine (the tray, the
// wizard, the CLI all send small requests at once) and short enough that a
// program opening connections and sending nothing cannot pile them up: at
// 10 s a connection, holding 2,000 fds takes 200 new connections a second.
var DefaultTimeouts = Timeouts{Header: 10 * time.Second, Body: 10 * time.Second, Idle: 60 * time.Second}

// maxBody caps any request body (each handler has its own, smaller, cap).
const maxBody = 1 << 20

// New makes a server with fresh random tokens.
func New(b Backend) (*Server, error) {
	if b.Owner == nil || b.Bus == nil {
		return nil, errors.New("controlserver: a server needs its owner and its event bus")
	}
	var toks [3]string
	for i := range toks {
		t, err := NewToken()
		if err != nil {
			return nil, err
		}
		toks[i] = t
	}
	return &Server{b: b, token: toks[0], readToken: toks[1], relayToken: toks[2], MaxWait: 10 * time.Minute, Timeouts: DefaultTimeouts, Limits: DefaultLimits,
		relayRate: rate{burst: relayBurst, perSec: relayPerSec}}, nil
}

// NewToken is 32 random bytes in hex.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making the control API token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Token is the operator's bearer token: it may do everything.
func (s *Server) Token() string { return s.token }

// ReadToken is the readers' token: state, events, the second PC's record.
func (s *Server) ReadToken() string { return s.readToken }

// RelayToken is the relay's token: what a reader may, and POST /v1/relay.
func (s *Server) RelayToken() string { return s.relayToken }

// role is what tok allows.
func (s *Server) role(tok string) Role {
	// Compare with all three, always: the time taken says nothing.
	op := subtle.ConstantTimeCompare([]byte(tok), []byte(s.token))
	rd := subtle.ConstantTimeCompare([]byte(tok), []byte(s.readToken))
	rl := subtle.ConstantTimeCompare([]byte(tok), []byte(s.relayToken))
	switch {
	case op == 1:
		return RoleOperator
	case rl == 1:
		return RoleRelay
	case rd == 1:
		return RoleReader
	}
	return RoleNone
}

// operatorReads are the GET routes only an operator may read: the server's
// log is the owner's (the file is 0600), not every local account's.
var operatorReads = map[string]bool{"/v1/logs": true}

// authorize is the one rule for every route, present and future, by method
// and path: a GET (or HEAD) reads, and any role may read, but for
// operatorReads; POST /v1/relay is for the relay and operators; every other
// request changes something and is for operators alone. It returns "" when
// allowed, else the sentence for the 403.
func (s *Server) authorize(role Role, r *http.Request) string {
	who := "the administrators"
	s.ownerMu.Lock()
	if s.Owner != "" {
		who = s.Owner + " (the Strata install's owner) and the administrators"
	}
	s.ownerMu.Unlock()
	path := pathpkg.Clean("/" + r.URL.Path) // "/v1/./logs/" is /v1/logs
	switch {
	case role == RoleOperator:
		return ""
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && operatorReads[path]:
		return fmt.Sprintf("reading %s is for %s: %s", path, who, howAdmin)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return ""
	case r.Method == http.MethodPost && path == "/v1/relay" && role == RoleRelay:
		return ""
	}
	return fmt.Sprintf("changing this PC's Strata (%s %s) is for %s: %s; every other account may only read", r.Method, path, who, howAdmin)
}

// howAdmin says how to act as one of them, in this OS's words.
var howAdmin = func() string {
	if runtime.GOOS == "windows" {
		return "sign in as the owner, or run it as an administrator (right-click, Run as administrator)"
	}
	return "run this as the owner, or as an administrator (sudo)"
}()

// Handler is the API with its guards.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range routes(s.b.Owner) {
		mux.Handle(r.pattern, r.h)
	}
	mux.HandleFunc("GET /v1/events", s.events)
	mux.HandleFunc("POST /v1/relay", s.relay)
	mux.HandleFunc("POST /v1/server/{action}", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, fmt.Sprintf("unknown action %q: use start, stop, restart or unload", r.PathValue("action")))
	})
	return s.guard(mux)
}

// route is one served endpoint.
type route struct {
	pattern string
	h       http.Handler
}

// routes binds every endpoint of controlapi's table to the owner's method
// of the same name: the compiler checks that each endpoint's request and
// answer are the method's, and TestEveryOwnerMethodCrossesTheAPI that each
// client method reaches its own.
func routes(o controlapi.Owner) []route {
	return []route{
		bind(controlapi.EpState, func(ctx context.Context, _ controlapi.None) (*controlapi.State, error) { return o.State(ctx) }),
		bind(controlapi.EpVision, o.SetVision),
		bind(controlapi.EpSettings, o.PatchSettings),
		bind(controlapi.EpRemote, func(ctx context.Context, _ controlapi.None) (*controlapi.RemoteResponse, error) {
			r, err := o.Remote(ctx)
			return &controlapi.RemoteResponse{Remote: r}, err
		}),
		bind(controlapi.EpRecordRemote, func(ctx context.Context, rec controlapi.RemoteRecord) (*controlapi.RemoteResponse, error) {
			r, err := o.RecordRemote(ctx, rec)
			return &controlapi.RemoteResponse{Remote: r}, err
		}),
		bind(controlapi.EpConfigs, func(ctx context.Context, _ controlapi.None) (*controlapi.ConfigList, error) { return o.Configs(ctx) }),
		bind(controlapi.EpSwitchConfig, o.SwitchConfig),
		bind(controlapi.EpRepairConfig, o.RepairConfig),
		bind(controlapi.EpUpdateStrata, o.UpdateStrata),
		bind(controlapi.EpLogs, func(ctx context.Context, q controlapi.LogsQuery) (*controlapi.LogsResponse, error) {
			return o.Logs(ctx, q.Tail)
		}),
		bind(controlapi.EpStart, done(o.Start)),
		bind(controlapi.EpStop, done(o.Stop)),
		bind(controlapi.EpRestart, done(o.Restart)),
		bind(controlapi.EpUnload, done(o.Unload)),
	}
}

// done is an action that answers {"ok": true}.
func done(f func(context.Context) error) func(context.Context, controlapi.None) (*controlapi.None, error) {
	return func(ctx context.Context, _ controlapi.None) (*controlapi.None, error) {
		if err := f(ctx); err != nil {
			return nil, err
		}
		return &controlapi.None{OK: true}, nil
	}
}

// bind serves ep through f: the request read from the query (a GET) or
// the body (unknown fields refused), the answer or the owner's refusal
// (controlapi.StatusOf) written back.
func bind[Req, Resp any](ep controlapi.Endpoint[Req, Resp], f func(context.Context, Req) (*Resp, error)) route {
	return route{pattern: ep.Pattern(), h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Req
		switch {
		case ep.FromQuery != nil:
			q, err := ep.FromQuery(r.URL.Query())
			if err != nil {
				answer(w, nil, err)
				return
			}
			req = q
		case r.Method == http.MethodGet, ep.EmptyOK && r.ContentLength == 0:
		default:
			if !decode(w, r, &req, ep.What) {
				return
			}
		}
		resp, err := f(r.Context(), req)
		answer(w, resp, err)
	})}
}

func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(code int, msg string) {
			// Answer and hang up: the body it may have announced is never
			// read (net/http would wait for it when closing the request,
			// without a deadline), and the connection is not kept.
			http.NewResponseController(w).SetReadDeadline(time.Now())
			w.Header().Set("Connection", "close")
			fail(w, code, msg)
		}
		if !fromLoopback(r.RemoteAddr) {
			refuse(http.StatusForbidden, "the control API answers only this machine")
			return
		}
		if !localHost(r.Host) {
			refuse(http.StatusForbidden, "the Host header must name this machine (127.0.0.1, localhost or ::1)")
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		role := RoleNone
		if ok {
			role = s.role(tok)
		}
		if role == RoleNone {
			refuse(http.StatusUnauthorized, "a valid token is required: send Authorization: Bearer <the content of the control-token file>")
			return
		}
		if why := s.authorize(role, r); why != "" {
			refuse(http.StatusForbidden, why)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), roleKey{}, role))
		if !s.readBody(w, r) {
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// readBody reads an authorised request's whole body (at most maxBody)
// within Timeouts.Body and hands the handler the bytes; the connection's
// read deadline is lifted afterwards, so a long-poll is not cut.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	rc := http.NewResponseController(w)
	if s.Timeouts.Body > 0 {
		rc.SetReadDeadline(time.Now().Add(s.Timeouts.Body))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		w.Header().Set("Connection", "close")
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes; send a smaller request", maxBody))
		case errors.Is(err, os.ErrDeadlineExceeded):
			fail(w, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s; send it whole with the headers", s.Timeouts.Body))
		default:
			fail(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return false
	}
	rc.SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

// decodeBody decodes the request body as exactly one JSON value into v:
// unknown fields and anything but white space after the value are refused
// with 400 and what is wrong. It reports whether v was filled.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, what string, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "the request is not "+what+": "+err.Error())
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		fail(w, http.StatusBadRequest, "the request has data after its JSON object; send one JSON object and nothing else")
		return false
	}
	return true
}

func fromLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func localHost(h string) bool {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// events is the long-poll: answer at once when there are events after
// since, else wait up to wait seconds for one.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since uint64
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			fail(w, http.StatusBadRequest, "since must be a sequence number")
			return
		}
		since = n
	}
	wait := 0 * time.Second
	if v := q.Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(w, http.StatusBadRequest, "wait must be a number of seconds")
			return
		}
		wait = time.Duration(n) * time.Second
	}
	if wait > s.MaxWait {
		wait = s.MaxWait
	}
	if rmw := s.limitsNow().ReaderMaxWait; RoleOf(r.Context()) != RoleOperator && wait > rmw && rmw > 0 {
		wait = rmw // a reader's waits are shorter
	}
	bus := s.b.Bus
	if since > bus.Last() {
		// A client from before a service restart: the numbers began again.
		evs, _ := bus.Since(0)
		reply(w, controlapi.EventsResponse{Events: forRole(r, evs), Next: bus.Last(), Gap: true})
		return
	}
	evs, gap := bus.Since(since)
	if len(evs) == 0 && wait > 0 {
		release, ok := s.waitSlot(w, r)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		evs, gap, _ = bus.Wait(ctx, since)
		cancel()
		release()
	}
	next := since
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	reply(w, controlapi.EventsResponse{Events: forRole(r, evs), Next: next, Gap: gap})
}

// logDetails are event details only an operator's events carry: those
// that quote the server's output (its log is the owner's), and a config's
// diff (config.switched, config.changed): its env values (an
// NGROK_AUTHTOKEN, a DATABASE_URL with its password) and any key that
// looks secret are the owner's, and a key name cannot tell them all apart.
// Readers still see what changed (the event, its paths), not how.
var logDetails = []string{"last_lines", "diff", "env"}

// forRole is evs as the caller may see them: an operator all of them, a
// reader each without its log details and secret-named ones.
func forRole(r *http.Request, evs []events.Event) []events.Event {
	evs = nonNil(evs)
	if RoleOf(r.Context()) == RoleOperator {
		return evs
	}
	out := make([]events.Event, len(evs))
	for i, e := range evs {
		out[i] = e.Without(logDetails...)
	}
	return out
}

func nonNil(e []events.Event) []events.Event {
	if e == nil {
		return []events.Event{}
	}
	return e
}

func (s *Server) relay(w http.ResponseWriter, r *http.Request) {
	if s.b.Relay == nil {
		fail(w, http.StatusNotImplemented, "relay reports are not taken by this build")
		return
	}
	var rep controlapi.RelayReport
	if !decode(w, r, &rep, "a relay report") {
		return
	}
	if s.b.RelayStarted != nil && RoleOf(r.Context()) == RoleRelay && !s.b.RelayStarted(rep.Secret) {
		fail(w, http.StatusForbidden, "this relay was not started by the Strata server the service runs (a relay started by hand, "+
			"or by a Strata started outside the service): its reports are not taken; the relay reads pictures all the same")
		return
	}
	if len(rep.Events) > events.MaxRelayEvents {
		fail(w, http.StatusBadRequest, fmt.Sprintf("a relay report holds at most %d events, not %d", events.MaxRelayEvents, len(rep.Events)))
		return
	}
	for i, e := range rep.Events {
		b, err := events.BoundRelay(e)
		if err != nil {
			fail(w, http.StatusBadRequest, err.Error()+"; nothing of this report was taken")
			return
		}
		rep.Events[i] = b
	}
	if !s.relayRate.take(len(rep.Events), time.Now()) {
		fail(w, http.StatusTooManyRequests, fmt.Sprintf("more relay events than the relay sends (at most %d at once, %d a second): nothing of this report was taken; send fewer", relayBurst, relayPerSec))
		return
	}
	answer(w, map[string]any{"ok": true}, s.b.Relay(r.Context(), rep))
}

// The relay's events may come at most relayPerSec a second on average, in
// bursts of up to relayBurst (its whole queue after the service was away):
// a picture makes a few events, a second PC reads at most a few a second.
const (
	relayBurst  = events.MaxRelayEvents
	relayPerSec = 20
)

// rate is a token bucket.
type rate struct {
	mu     sync.Mutex
	burst  int
	perSec int
	have   float64
	last   time.Time
}

// take spends n tokens if the bucket holds them.
func (b *rate) take(n int, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.have = float64(b.burst)
	} else {
		b.have = min(float64(b.burst), b.have+now.Sub(b.last).Seconds()*float64(b.perSec))
	}
	b.last = now
	if float64(n) > b.have {
		return false
	}
	b.have -= float64(n)
	return true
}

type roleKey struct{}

// RoleOf is the role of the request's caller (for handlers that say more).
func RoleOf(ctx context.Context) Role {
	r, _ := ctx.Value(roleKey{}).(Role)
	return r
}

// decode reads a JSON body (unknown fields refused); false: answered 400.
func decode(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	return decodeBody(w, r, 1<<20, what, v)
}

// answer replies v, or the owner's refusal with its code (controlapi.StatusOf:
// 400 bad request, 409 conflict, anything unexplained 500).
func answer(w http.ResponseWriter, v any, err error) {
	if se := controlapi.StatusOf(err); se != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(se.Code)
		json.NewEncoder(w).Encode(controlapi.Error{Error: se.Message, Busy: se.Busy})
		return
	}
	reply(w, v)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(controlapi.Error{Error: msg})
}

// Listener listens on addr (default 127.0.0.1:0, a random port).
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !localHost(host) {
		return nil, fmt.Errorf("the control API listens on loopback only, not %s", host)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the control API on %s: %w", addr, err)
	}
	return l, nil
}

// WriteFiles publishes the address and the read token where clients look
// (locations.ControlAddrFile / ControlTokenFile). The token file is 0644:
// every user of this machine may read the state (as Tailscale's LocalAPI
// lets every local user read); it is never sent over the network. The token is written
// before the address, so a client that finds the address finds the token.
func WriteFiles(addrFile, tokenFile, addr, token string) error {
	for _, f := range []string{addrFile, tokenFile} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(f), err)
		}
	}
	if err := atomicfile.Write(tokenFile, []byte(token+"\n"), 0o644); err != nil {
		return err
	}
	os.Chmod(tokenFile, 0o644)
	return atomicfile.Write(addrFile, []byte(addr+"\n"), 0o644)
}

// Files are where Publish writes the address and the tokens.
type Files struct {
	Addr     string // the address (everyone reads it)
	Read     string // the read token (everyone reads it)
	Operator string // the operator token: the administrators and the owner
	Relay    string // the relay token: the administrators and the server's account
}

// Publish writes the tokens, then the address (a client that finds the
// address finds the tokens): the read token for everyone, the operator
// token for the administrators and owner only, the relay token for the
// administrators and relay (the account that runs Strata's server, whose
// child the relay is) only. nil owner or relay: the administrators alone.
func (s *Server) Publish(f Files, addr string, owner, relay *account.Account) error {
	for _, p := range []string{f.Addr, f.Read, f.Operator, f.Relay} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(p), err)
		}
	}
	s.filesMu.Lock()
	s.files = f
	s.filesMu.Unlock()
	if err := s.SetOwner(owner); err != nil {
		return err
	}
	if err := s.SetRelay(relay); err != nil {
		return err
	}
	return WriteFiles(f.Addr, f.Read, addr, s.readToken)
}

// SetOwner makes owner (nil: none but the administrators) the one account
// besides the administrators that may read the operator token, and names
// them in refusals: after Publish, and again when the service switches to
// an install another account owns. A privileged owner counts as none.
func (s *Server) SetOwner(owner *account.Account) error {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	if owner != nil && owner.Privileged {
		owner = nil
	}
	if s.files.Operator != "" {
		if err := account.WritePrivate(s.files.Operator, []byte(s.token+"\n"), owner); err != nil {
			return err
		}
	}
	name := ""
	uid := int64(-1)
	if owner != nil {
		name = owner.Name
		if owner.SID == "" {
			uid = int64(owner.UID)
		}
	}
	s.setOwnerUID(uid) // the owner's connections are never refused
	s.ownerMu.Lock()
	s.Owner = name
	s.ownerMu.Unlock()
	return nil
}

// SetRelay makes relay (nil: none but the administrators) the account
// that may read the relay token: the one that runs Strata's server.
func (s *Server) SetRelay(relay *account.Account) error {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	if s.files.Relay == "" {
		return nil
	}
	return account.WritePrivate(s.files.Relay, []byte(s.relayToken+"\n"), relay)
}

// Unpublish deletes the files Publish wrote, those that are still ours.
func (s *Server) Unpublish(f Files, addr string) {
	RemoveFiles(f.Addr, f.Read, addr, s.readToken)
	for _, p := range []struct{ file, tok string }{{f.Operator, s.token}, {f.Relay, s.relayToken}} {
		if b, err := os.ReadFile(p.file); err == nil && strings.TrimSpace(string(b)) == p.tok {
			os.Remove(p.file)
		}
	}
}

// RemoveFiles deletes the address and token files if they still hold ours
// (another instance may have replaced them).
func RemoveFiles(addrFile, tokenFile, addr, token string) {
	if b, err := os.ReadFile(addrFile); err == nil && strings.TrimSpace(string(b)) == addr {
		os.Remove(addrFile)
	}
	if b, err := os.ReadFile(tokenFile); err == nil && strings.TrimSpace(string(b)) == token {
		os.Remove(tokenFile)
	}
}

// Serve runs the API on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if _, err := RaiseFDLimit(); err != nil {
		fmt.Fprintf(os.Stderr, "raising the descriptor limit: %v\n", err)
	}
	l = &limitedListener{Listener: l, s: s}
	srv := &http.Server{
		ConnContext:       connContext,
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.Timeouts.Header,
		IdleTimeout:       s.Timeouts.Idle,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		return err
	}
}
