package controlapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/strata-companion/companion/internal/settings"
)

// Owner is everything a client may ask of the owner of Strata's config,
// the companion's settings and the supervised server: the one road from
// the CLI, the tray, the wizard and the second-PC code to them. Three
// things implement it, and the compiler holds each to it:
//
//   - the service's daemon (service/daemon), the real owner;
//   - the control API's Client, which carries each call to the daemon
//     over the route table below (service/controlserver serves every
//     Endpoint by calling the same method of the daemon);
//   - internal/owner's in-process owner, the same backend in this
//     process when no service answers (it refuses what needs a running
//     service: the server's start, stop and log).
//
// internal/owner.Open is the one place that chooses between the service
// and the in-process owner. Adding an endpoint is one method here, its
// Endpoint, and the implementations the compiler then names; the route
// test (TestEveryOwnerMethodCrossesTheAPI in service/controlserver) calls
// every method through the real server.
//
// Events (GET /v1/events) and the relay's reports (POST /v1/relay) are not
// the owner's: the first is the service's event bus, the second the
// relay's own road in (a relay is not a client of the owner).
type Owner interface {
	// State is the service's snapshot (GET /v1/state).
	State(ctx context.Context) (*State, error)
	// SetVision moves where pictures are read (POST /v1/vision).
	SetVision(ctx context.Context, req VisionRequest) (*VisionResponse, error)
	// PatchSettings changes settings that need no config edit (POST
	// /v1/settings) and returns the state after it.
	PatchSettings(ctx context.Context, p SettingsPatch) (*State, error)
	// Remote is the recorded second PC (GET /v1/remote; nil: none).
	Remote(ctx context.Context) (*settings.Remote, error)
	// RecordRemote records what the second-PC code did (POST /v1/remote)
	// and returns the record after it.
	RecordRemote(ctx context.Context, rec RemoteRecord) (*settings.Remote, error)
	// Configs lists the install's configs (GET /v1/configs).
	Configs(ctx context.Context) (*ConfigList, error)
	// SwitchConfig runs another config (POST /v1/config).
	SwitchConfig(ctx context.Context, req ConfigRequest) (*ConfigResponse, error)
	// RepairConfig puts the placement back into a config Strata's setup
	// rewrote (POST /v1/config/repair).
	RepairConfig(ctx context.Context, req RepairRequest) (*RepairResponse, error)
	// UpdateStrata checks for or runs Strata's own update (POST
	// /v1/strata/update).
	UpdateStrata(ctx context.Context, req UpdateRequest) (*UpdateResponse, error)
	// Logs is the last tail lines of the server's log (GET /v1/logs).
	Logs(ctx context.Context, tail int) (*LogsResponse, error)
	// Start, Stop and Restart the supervised Strata server (POST
	// /v1/server/start|stop|restart).
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Restart(ctx context.Context) error
	// Unload has the running Strata unload its model now (its POST
	// /v1/unload), giving the GPU's memory back while the server keeps
	// answering; the next request loads it again (POST /v1/server/unload).
	Unload(ctx context.Context) error
}

// The compiler holds the client to the interface.
var _ Owner = (*Client)(nil)

// None is the request of an endpoint that takes nothing, and the answer
// of one that says only that it was done ({"ok": true}).
type None struct {
	OK bool `json:"ok,omitempty"`
}

// LogsQuery is GET /v1/logs's query.
type LogsQuery struct {
	Tail int
}

// DefaultLogTail and MaxLogTail bound GET /v1/logs.
const (
	DefaultLogTail = 100
	MaxLogTail     = 10000
)

// Endpoint is one route of the API: its method and path, what its request
// and answer are (Req and Resp, checked by the compiler on both sides),
// and how a request is read. A GET's request travels in the query.
type Endpoint[Req, Resp any] struct {
	Method, Path string
	// What names the request in a 400's words ("a vision request").
	What string
	// EmptyOK: a POST with no body is the zero request.
	EmptyOK bool
	// Query and FromQuery carry a GET's request (nil: it takes none).
	Query     func(Req) url.Values
	FromQuery func(url.Values) (Req, error)
}

// Pattern is the route's net/http ServeMux pattern.
func (e Endpoint[Req, Resp]) Pattern() string { return e.Method + " " + e.Path }

// The route table: every Owner method's endpoint. The server binds each to
// the owner's method of the same name (routes in service/controlserver); the
// client's methods below call them.
var (
	EpState        = Endpoint[None, State]{Method: http.MethodGet, Path: "/v1/state"}
	EpVision       = Endpoint[VisionRequest, VisionResponse]{Method: http.MethodPost, Path: "/v1/vision", What: "a vision request"}
	EpSettings     = Endpoint[SettingsPatch, State]{Method: http.MethodPost, Path: "/v1/settings", What: "a settings patch"}
	EpRemote       = Endpoint[None, RemoteResponse]{Method: http.MethodGet, Path: "/v1/remote"}
	EpRecordRemote = Endpoint[RemoteRecord, RemoteResponse]{Method: http.MethodPost, Path: "/v1/remote", What: "a second-PC record"}
	EpConfigs      = Endpoint[None, ConfigList]{Method: http.MethodGet, Path: "/v1/configs"}
	EpSwitchConfig = Endpoint[ConfigRequest, ConfigResponse]{Method: http.MethodPost, Path: "/v1/config", What: "a config request"}
	EpRepairConfig = Endpoint[RepairRequest, RepairResponse]{Method: http.MethodPost, Path: "/v1/config/repair", What: "a repair request", EmptyOK: true}
	EpUpdateStrata = Endpoint[UpdateRequest, UpdateResponse]{Method: http.MethodPost, Path: "/v1/strata/update", What: "an update request"}
	EpLogs         = Endpoint[LogsQuery, LogsResponse]{Method: http.MethodGet, Path: "/v1/logs",
		Query: func(q LogsQuery) url.Values { return url.Values{"tail": {strconv.Itoa(q.Tail)}} },
		FromQuery: func(v url.Values) (LogsQuery, error) {
			q := LogsQuery{Tail: DefaultLogTail}
			if s := v.Get("tail"); s != "" {
				t, err := strconv.Atoi(s)
				if err != nil || t < 0 {
					return q, BadRequest(errors.New("tail must be a number of lines"))
				}
				q.Tail = min(t, MaxLogTail)
			}
			return q, nil
		}}
	EpStart   = Endpoint[None, None]{Method: http.MethodPost, Path: "/v1/server/start", EmptyOK: true}
	EpStop    = Endpoint[None, None]{Method: http.MethodPost, Path: "/v1/server/stop", EmptyOK: true}
	EpRestart = Endpoint[None, None]{Method: http.MethodPost, Path: "/v1/server/restart", EmptyOK: true}
	EpUnload  = Endpoint[None, None]{Method: http.MethodPost, Path: "/v1/server/unload", EmptyOK: true}
)

// call makes one request of ep and decodes its answer.
func call[Req, Resp any](ctx context.Context, c *Client, ep Endpoint[Req, Resp], req Req) (*Resp, error) {
	var out Resp
	path := ep.Path
	var in any
	switch {
	case ep.Query != nil:
		path += "?" + ep.Query(req).Encode()
	case ep.Method != http.MethodGet:
		if _, none := any(req).(None); !none {
			in = req
		}
	}
	var into any = &out
	if _, none := any(out).(None); none {
		into = nil // an action's answer says only that it was done
	}
	if err := c.do(ctx, ep.Method, path, in, into); err != nil {
		return nil, err
	}
	return &out, nil
}

// State reads GET /v1/state.
func (c *Client) State(ctx context.Context) (*State, error) { return call(ctx, c, EpState, None{}) }

// SetVision posts POST /v1/vision.
func (c *Client) SetVision(ctx context.Context, req VisionRequest) (*VisionResponse, error) {
	return call(ctx, c, EpVision, req)
}

// PatchSettings changes settings that need no config edit (POST /v1/settings)
// and returns the settings' new view in the state.
func (c *Client) PatchSettings(ctx context.Context, p SettingsPatch) (*State, error) {
	return call(ctx, c, EpSettings, p)
}

// Remote reads the second PC the service has recorded (GET /v1/remote; nil: none).
func (c *Client) Remote(ctx context.Context) (*settings.Remote, error) {
	r, err := call(ctx, c, EpRemote, None{})
	if err != nil {
		return nil, err
	}
	return r.Remote, nil
}

// RecordRemote asks the service to record what the second-PC code did
// (POST /v1/remote) and returns the record after it.
func (c *Client) RecordRemote(ctx context.Context, rec RemoteRecord) (*settings.Remote, error) {
	r, err := call(ctx, c, EpRecordRemote, rec)
	if err != nil {
		return nil, err
	}
	return r.Remote, nil
}

// Configs lists the install's Strata configs and which one runs (GET /v1/configs).
func (c *Client) Configs(ctx context.Context) (*ConfigList, error) {
	return call(ctx, c, EpConfigs, None{})
}

// SwitchConfig asks the service to run another config (POST /v1/config).
func (c *Client) SwitchConfig(ctx context.Context, r ConfigRequest) (*ConfigResponse, error) {
	return call(ctx, c, EpSwitchConfig, r)
}

// RepairConfig puts the companion's placement back into a config that
// Strata's setup rewrote (POST /v1/config/repair).
func (c *Client) RepairConfig(ctx context.Context, r RepairRequest) (*RepairResponse, error) {
	return call(ctx, c, EpRepairConfig, r)
}

// UpdateStrata checks for or runs Strata's own update (POST /v1/strata/update).
func (c *Client) UpdateStrata(ctx context.Context, r UpdateRequest) (*UpdateResponse, error) {
	return call(ctx, c, EpUpdateStrata, r)
}

// Logs reads GET /v1/logs?tail=N.
func (c *Client) Logs(ctx context.Context, tail int) (*LogsResponse, error) {
	return call(ctx, c, EpLogs, LogsQuery{Tail: tail})
}

// Start, Stop and Restart post POST /v1/server/{start,stop,restart}.
func (c *Client) Start(ctx context.Context) error {
	_, err := call(ctx, c, EpStart, None{})
	return err
}

func (c *Client) Stop(ctx context.Context) error {
	_, err := call(ctx, c, EpStop, None{})
	return err
}

func (c *Client) Restart(ctx context.Context) error {
	_, err := call(ctx, c, EpRestart, None{})
	return err
}

// Unload posts POST /v1/server/unload.
func (c *Client) Unload(ctx context.Context) error {
	_, err := call(ctx, c, EpUnload, None{})
	return err
}

// ServerAction runs one of the server's actions by its name on o: "start",
// "stop", "restart" or "unload" (the tray's and the CLI's words for them).
func ServerAction(ctx context.Context, o Owner, action string) error {
	switch action {
	case "start":
		return o.Start(ctx)
	case "stop":
		return o.Stop(ctx)
	case "restart":
		return o.Restart(ctx)
	case "unload":
		return o.Unload(ctx)
	}
	return BadRequest(fmt.Errorf("unknown action %q: use start, stop, restart or unload", action))
}

// Server posts POST /v1/server/{action} by the action's name (another
// name is the service's to refuse: 404).
func (c *Client) Server(ctx context.Context, action string) error {
	switch action {
	case "start", "stop", "restart", "unload":
		return ServerAction(ctx, c, action)
	}
	return c.do(ctx, http.MethodPost, "/v1/server/"+url.PathEscape(action), nil, nil)
}
