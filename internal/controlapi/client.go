package controlapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/locations"
)

// ErrNotRunning means no service answers: no address file, or nothing listens.
var ErrNotRunning = errors.New("the Strata Companion service is not running")

// Client talks to the service's control API.
type Client struct {
	BaseURL string // http://127.0.0.1:PORT
	Token   string
	HTTP    *http.Client
	// RelaySecret goes with each relay report (NewRelayClient reads it
	// from EnvRelaySecret).
	RelaySecret string
}

// EnvRelaySecret is set by the service in the environment of each Strata
// server it starts, a new random value per start; Strata hands its whole
// environment to its encoder, so the relay it starts has it. The service
// takes relay reports (POST /v1/relay with the relay token) only with the
// current start's value: a relay started by hand, or by a Strata the
// service did not start, reports nothing into its state (docs/security.md).
const EnvRelaySecret = "STRATA_COMPANION_RELAY_SECRET"

// NewClient reads the address and token files the running service wrote. A
// program run by a normal user looks in its own state folder and then in a
// system service's (locations.ServiceStateDirs).
func NewClient() (*Client, error) {
	return NewClientFrom(locations.ServiceStateDirs()...)
}

// NewClientFrom reads control-addr and control-token from the first of dirs
// that has an address file.
func NewClientFrom(dirs ...string) (*Client, error) {
	for _, dir := range dirs {
		addrFile := filepath.Join(dir, filepath.Base(locations.ControlAddrFile()))
		addr, err := os.ReadFile(addrFile)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the control API address %s: %w", addrFile, err)
		}
		// The operator token when this account may read it (the install's
		// owner, an administrator), else the read token (everyone).
		tok, err := os.ReadFile(filepath.Join(dir, filepath.Base(locations.ControlOperatorTokenFile())))
		if err != nil || len(strings.TrimSpace(string(tok))) == 0 {
			tokFile := filepath.Join(dir, filepath.Base(locations.ControlTokenFile()))
			if tok, err = os.ReadFile(tokFile); err != nil {
				return nil, fmt.Errorf("reading the control API token %s (are you a user of this machine?): %w", tokFile, err)
			}
		}
		return &Client{
			BaseURL: "http://" + strings.TrimSpace(string(addr)),
			Token:   strings.TrimSpace(string(tok)),
			HTTP:    &http.Client{},
		}, nil
	}
	return nil, ErrNotRunning
}

// NewRelayClient is the relay's client: the relay token (it may report the
// relay's events and read), found as NewClient finds the service. An
// account that may not read the relay token (not the one that runs
// Strata's server) gets an error saying so.
func NewRelayClient() (*Client, error) {
	for _, dir := range locations.ServiceStateDirs() {
		addr, err := os.ReadFile(filepath.Join(dir, filepath.Base(locations.ControlAddrFile())))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		tokFile := filepath.Join(dir, filepath.Base(locations.RelayTokenFile()))
		tok, err := os.ReadFile(tokFile)
		if err != nil {
			return nil, fmt.Errorf("reading the relay's token %s (only the account that runs Strata's server may): %w", tokFile, err)
		}
		return &Client{BaseURL: "http://" + strings.TrimSpace(string(addr)), Token: strings.TrimSpace(string(tok)), HTTP: &http.Client{},
			RelaySecret: os.Getenv(EnvRelaySecret)}, nil
	}
	return nil, ErrNotRunning
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w (%v)", ErrNotRunning, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e Error
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return &StatusError{Code: resp.StatusCode, Message: e.Error, Busy: e.Busy, FromService: true}
		}
		return &StatusError{Code: resp.StatusCode, Message: strings.TrimSpace(string(b)), FromService: true}
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Events long-polls GET /v1/events for events after since, waiting up to wait.
func (c *Client) Events(ctx context.Context, since uint64, wait time.Duration) (*EventsResponse, error) {
	var r EventsResponse
	q := url.Values{"since": {strconv.FormatUint(since, 10)}, "wait": {strconv.Itoa(int(wait / time.Second))}}
	return &r, c.do(ctx, http.MethodGet, "/v1/events?"+q.Encode(), nil, &r)
}

// ReportRelay sends what the relay learned or did (POST /v1/relay).
func (c *Client) ReportRelay(ctx context.Context, r RelayReport) error {
	if r.Secret == "" {
		r.Secret = c.RelaySecret
	}
	return c.do(ctx, "POST", "/v1/relay", r, nil)
}
