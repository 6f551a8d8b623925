// Package controlserver serves the control API (docs/control-api.md) on
// loopback: the tray, the wizard and the CLI read the state, follow events
// and ask for changes through it. The JSON types are internal/controlapi's.
//
// Three checks guard every request, in this order: the peer must be on this
// machine (403), the Host header must be a local name (403: a web page in a
// browser on this PC cannot reach us through DNS rebinding), and the bearer
// token must match (401).
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
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/atomicfile"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
)

// Control is what the API can ask of the supervisor.
type Control interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Restart(ctx context.Context) error
}

// Backend is everything the server needs; nil funcs answer 501.
type Backend struct {
	Bus     *events.Bus
	State   func() controlapi.State
	Control Control
	// Vision validates and applies POST /v1/vision. An error that is a
	// *RequestError is answered with its code (400 for a bad request).
	Vision func(ctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error)
	// Settings applies POST /v1/settings and returns the new state.
	Settings func(ctx context.Context, p controlapi.SettingsPatch) (*controlapi.State, error)
	// Relay takes POST /v1/relay (what the relay learned or did).
	Relay func(ctx context.Context, r controlapi.RelayReport) error
	// Remote reads (rec nil: GET /v1/remote) or records (POST /v1/remote)
	// the second PC; it returns the record after it (nil: none).
	Remote func(ctx context.Context, rec *controlapi.RemoteRecord) (*settings.Remote, error)
	// Logs returns the last n lines of the captured server output.
	Logs func(n int) (*controlapi.LogsResponse, error)
	// Configs lists the install's configs (GET /v1/configs).
	Configs func(ctx context.Context) (*controlapi.ConfigList, error)
	// SwitchConfig runs another config (POST /v1/config); a conflict is a
	// *RequestError with 409.
	SwitchConfig func(ctx context.Context, req controlapi.ConfigRequest) (*controlapi.ConfigResponse, error)
	// UpdateStrata checks for or runs Strata's update (POST /v1/strata/update).
	UpdateStrata func(ctx context.Context, req controlapi.UpdateRequest) (*controlapi.UpdateResponse, error)
	// RepairConfig puts the placement back into a rewritten config (POST /v1/config/repair).
	RepairConfig func(ctx context.Context) (*controlapi.RepairResponse, error)
}

// RequestError is an error the client caused (bad JSON, an unknown
// placement): it is answered with Code and the message as is.
type RequestError struct {
	Code int
	Err  error
	// Busy: refused because Strata is answering a request (the client may
	// ask again with confirm); answered as the body's "busy".
	Busy bool
}

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// Server is the HTTP side of the control API.
type Server struct {
	b     Backend
	token string
	// MaxWait caps /v1/events?wait= (default 10 min: a loopback client that
	// asks again only when something happens costs the idle tray nothing).
	MaxWait time.Duration
	// Timeouts bound what a connection may hold without sending a whole,
	// authorised request (defaults: DefaultTimeouts). Set before Serve.
	Timeouts Timeouts
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

// New makes a server with a fresh random token.
func New(b Backend) (*Server, error) {
	tok, err := NewToken()
	if err != nil {
		return nil, err
	}
	return &Server{b: b, token: tok, MaxWait: 10 * time.Minute, Timeouts: DefaultTimeouts}, nil
}

// NewToken is 32 random bytes in hex.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making the control API token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Token is the bearer token clients must send.
func (s *Server) Token() string { return s.token }

// Handler is the API with its guards.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/state", s.state)
	mux.HandleFunc("GET /v1/events", s.events)
	mux.HandleFunc("POST /v1/vision", s.vision)
	mux.HandleFunc("POST /v1/settings", s.settings)
	mux.HandleFunc("POST /v1/relay", s.relay)
	mux.HandleFunc("GET /v1/remote", s.remote)
	mux.HandleFunc("POST /v1/remote", s.remote)
	mux.HandleFunc("POST /v1/server/{action}", s.server)
	mux.HandleFunc("GET /v1/logs", s.logs)
	mux.HandleFunc("GET /v1/configs", s.configs)
	mux.HandleFunc("POST /v1/config", s.switchConfig)
	mux.HandleFunc("POST /v1/config/repair", s.repairConfig)
	mux.HandleFunc("POST /v1/strata/update", s.updateStrata)
	return s.guard(mux)
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
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
			refuse(http.StatusUnauthorized, "a valid token is required: send Authorization: Bearer <the content of the control-token file>")
			return
		}
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

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	if s.b.State == nil {
		fail(w, http.StatusNotImplemented, "no state in this service")
		return
	}
	reply(w, s.b.State())
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
	bus := s.b.Bus
	if since > bus.Last() {
		// A client from before a service restart: the numbers began again.
		evs, _ := bus.Since(0)
		reply(w, controlapi.EventsResponse{Events: nonNil(evs), Next: bus.Last(), Gap: true})
		return
	}
	evs, gap := bus.Since(since)
	if len(evs) == 0 && wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		evs, gap, _ = bus.Wait(ctx, since)
		cancel()
	}
	next := since
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	reply(w, controlapi.EventsResponse{Events: nonNil(evs), Next: next, Gap: gap})
}

func nonNil(e []events.Event) []events.Event {
	if e == nil {
		return []events.Event{}
	}
	return e
}

func (s *Server) vision(w http.ResponseWriter, r *http.Request) {
	if s.b.Vision == nil {
		fail(w, http.StatusNotImplemented, "changing vision is not available in this build")
		return
	}
	var req controlapi.VisionRequest
	if decode(w, r, &req, "a vision request") {
		resp, err := s.b.Vision(r.Context(), req)
		answer(w, resp, err)
	}
}

func (s *Server) settings(w http.ResponseWriter, r *http.Request) {
	if s.b.Settings == nil {
		fail(w, http.StatusNotImplemented, "changing settings is not available in this build")
		return
	}
	var p controlapi.SettingsPatch
	if decode(w, r, &p, "a settings patch") {
		st, err := s.b.Settings(r.Context(), p)
		answer(w, st, err)
	}
}

func (s *Server) configs(w http.ResponseWriter, r *http.Request) {
	if s.b.Configs == nil {
		fail(w, http.StatusNotImplemented, "listing configs is not available in this build")
		return
	}
	l, err := s.b.Configs(r.Context())
	answer(w, l, err)
}

func (s *Server) switchConfig(w http.ResponseWriter, r *http.Request) {
	if s.b.SwitchConfig == nil {
		fail(w, http.StatusNotImplemented, "switching the config is not available in this build")
		return
	}
	var req controlapi.ConfigRequest
	if decode(w, r, &req, "a config request") {
		resp, err := s.b.SwitchConfig(r.Context(), req)
		answer(w, resp, err)
	}
}

func (s *Server) repairConfig(w http.ResponseWriter, r *http.Request) {
	if s.b.RepairConfig == nil {
		fail(w, http.StatusNotImplemented, "repairing the config is not available in this build")
		return
	}
	var req struct{}
	if r.ContentLength != 0 && !decode(w, r, &req, "an empty object") {
		return
	}
	resp, err := s.b.RepairConfig(r.Context())
	answer(w, resp, err)
}

func (s *Server) updateStrata(w http.ResponseWriter, r *http.Request) {
	if s.b.UpdateStrata == nil {
		fail(w, http.StatusNotImplemented, "updating Strata is not available in this build")
		return
	}
	var req controlapi.UpdateRequest
	if decode(w, r, &req, "an update request") {
		resp, err := s.b.UpdateStrata(r.Context(), req)
		answer(w, resp, err)
	}
}

func (s *Server) relay(w http.ResponseWriter, r *http.Request) {
	if s.b.Relay == nil {
		fail(w, http.StatusNotImplemented, "relay reports are not taken by this build")
		return
	}
	var rep controlapi.RelayReport
	if decode(w, r, &rep, "a relay report") {
		answer(w, map[string]any{"ok": true}, s.b.Relay(r.Context(), rep))
	}
}

func (s *Server) remote(w http.ResponseWriter, r *http.Request) {
	if s.b.Remote == nil {
		fail(w, http.StatusNotImplemented, "second-PC records are not taken by this build")
		return
	}
	var rec *controlapi.RemoteRecord
	if r.Method == http.MethodPost {
		rec = &controlapi.RemoteRecord{}
		if !decode(w, r, rec, "a second-PC record") {
			return
		}
	}
	rm, err := s.b.Remote(r.Context(), rec)
	answer(w, controlapi.RemoteResponse{Remote: rm}, err)
}

// decode reads a JSON body (unknown fields refused); false: answered 400.
func decode(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	return decodeBody(w, r, 1<<20, what, v)
}

// answer replies v, or the error: a *RequestError with its code (400 bad
// request, 409 conflict), anything else 500.
func answer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		var re *RequestError
		if errors.As(err, &re) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(re.Code)
			json.NewEncoder(w).Encode(controlapi.Error{Error: re.Error(), Busy: re.Busy})
			return
		}
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	reply(w, v)
}

func (s *Server) server(w http.ResponseWriter, r *http.Request) {
	if s.b.Control == nil {
		fail(w, http.StatusNotImplemented, "no supervisor in this service")
		return
	}
	var err error
	switch a := r.PathValue("action"); a {
	case "start":
		err = s.b.Control.Start(r.Context())
	case "stop":
		err = s.b.Control.Stop(r.Context())
	case "restart":
		err = s.b.Control.Restart(r.Context())
	default:
		fail(w, http.StatusNotFound, fmt.Sprintf("unknown action %q: use start, stop or restart", a))
		return
	}
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	reply(w, map[string]any{"ok": true})
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	if s.b.Logs == nil {
		fail(w, http.StatusNotImplemented, "no logs in this service")
		return
	}
	n := 100
	if v := r.URL.Query().Get("tail"); v != "" {
		t, err := strconv.Atoi(v)
		if err != nil || t < 0 {
			fail(w, http.StatusBadRequest, "tail must be a number of lines")
			return
		}
		n = t
	}
	if n > 10000 {
		n = 10000
	}
	resp, err := s.b.Logs(n)
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	reply(w, resp)
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

// WriteFiles publishes the address and the token where clients look
// (locations.ControlAddrFile / ControlTokenFile). The token file is 0644:
// every user of this machine may control its Strata (as they could start
// it by hand); it is never sent over the network. The token is written
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
	srv := &http.Server{
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
