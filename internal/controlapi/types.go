// Package controlapi is the contract between strata-service (the server side
// lives in service/) and its clients, the tray and the wizard: the JSON types
// and a small client. See docs/control-api.md.
package controlapi

import (
	"encoding/json"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
)

// Server phases.
const (
	PhaseStopped    = "stopped"
	PhaseStarting   = "starting"
	PhaseReady      = "ready"
	PhaseRestarting = "restarting"
	PhaseFailed     = "failed"
)

// Encoder states.
const (
	EncoderUnknown  = "unknown"
	EncoderOff      = "off"      // vision not configured
	EncoderStarting = "starting" // being started / warming up
	EncoderReady    = "ready"
	EncoderIdle     = "idle" // stopped after idle; wakes on the next picture
	EncoderWaking   = "waking"
	EncoderFailed   = "failed"
	// EncoderDegraded: it reads pictures, but on a CPU where a GPU was
	// expected (VisionState.Degraded says why).
	EncoderDegraded = "degraded"
)

// State is a snapshot of everything the service knows. Seq is the sequence
// number of the newest event folded into it: a client reads the state, then
// follows /v1/events?since=Seq and misses nothing.
type State struct {
	Seq     uint64      `json:"seq"`
	Service ServiceInfo `json:"service"`
	Server  ServerState `json:"server"`
	Vision  VisionState `json:"vision"`
	Remote  *RemoteInfo `json:"remote,omitempty"`
	Config  ConfigInfo  `json:"config"`
	// Settings is what clients need of the companion's settings: the tray
	// reads them here, never the file (nil from a service older than it).
	Settings *SettingsView `json:"settings,omitempty"`
}

// SettingsView is the companion's settings as clients need them; the
// service reads them for every state, so a change (settings.changed) is in
// the state read after its event.
type SettingsView struct {
	Notifications bool `json:"notifications"`
	FallbackCPU   bool `json:"fallback_cpu,omitempty"`
	// Measured is the last trial picture per place (nil: none).
	Measured *settings.Measured `json:"measured,omitempty"`
	// SecondPC is the paired second PC's address, no secrets (nil: none).
	SecondPC *SecondPCAddress `json:"second_pc,omitempty"`
}

// SecondPCAddress is where the paired second PC is reached.
type SecondPCAddress struct {
	Host string `json:"host"`
	User string `json:"user,omitempty"`
	Port int    `json:"port,omitempty"`
}

// ViewOf is s as a state carries it.
func ViewOf(s *settings.Settings) *SettingsView {
	v := &SettingsView{Notifications: s.NotificationsOn(), FallbackCPU: s.FallbackCPU != nil && *s.FallbackCPU, Measured: s.Measured}
	if s.Remote != nil && s.Remote.Host != "" {
		v.SecondPC = &SecondPCAddress{Host: s.Remote.Host, User: s.Remote.User, Port: s.Remote.Port}
	}
	return v
}

// ServiceInfo describes strata-service itself.
type ServiceInfo struct {
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	PID     int       `json:"pid"`
}

// ServerState is the supervised Strata server.
type ServerState struct {
	Phase string `json:"phase"`
	// Detail is the current start phase or the failure, in words.
	Detail    string    `json:"detail,omitempty"`
	Since     time.Time `json:"since"`
	PID       int       `json:"pid,omitempty"`
	Port      int       `json:"port,omitempty"`
	URL       string    `json:"url,omitempty"` // e.g. http://127.0.0.1:8080/v1
	Model     string    `json:"model,omitempty"`
	Context   int       `json:"context,omitempty"`
	Restarts  int       `json:"restarts"` // restarts after crashes since the service started
	LastError string    `json:"last_error,omitempty"`
	// Unloaded is when Strata unloaded its model (idle_unload_s, or POST
	// /v1/unload), ending its engine and its encoder; zero while the model
	// is loaded. The server still answers and loads both again on the next
	// request.
	Unloaded time.Time `json:"unloaded,omitempty"`
	// LastStartS is how long the last start took, from starting to ready
	// (what a restart will likely cost text); 0 until one got ready.
	LastStartS float64 `json:"last_start_s,omitempty"`
	// ExpertCache from the engine's startup lines.
	Experts        int     `json:"experts,omitempty"`
	ExpertCacheGiB float64 `json:"expert_cache_gib,omitempty"`
	// LogDropped counts the server's output lines that could not be written
	// to its log file (a full disk); LogProblem says why while it lasts.
	LogDropped int    `json:"log_dropped,omitempty"`
	LogProblem string `json:"log_problem,omitempty"`
	// Version is the running Strata's version (its /v1/status), Engine the
	// engine build it reports.
	Version string `json:"version,omitempty"`
	Engine  string `json:"engine,omitempty"`
	// Foreign is a Strata server the service did not start that holds the
	// port (Strata's own console or model switcher); nil when none.
	Foreign *ForeignServer `json:"foreign,omitempty"`
}

// ForeignServer names a process on the server's port the service did not start.
type ForeignServer struct {
	Port    int    `json:"port"`
	PID     int    `json:"pid,omitempty"`
	Cmdline string `json:"cmdline,omitempty"`
}

// VisionState is where pictures are read and how the encoder is.
type VisionState struct {
	Placement string `json:"placement"` // gpu, cpu, remote, off
	Encoder   string `json:"encoder"`   // one of the Encoder* constants
	Error     string `json:"error,omitempty"`
	// LastPictureMS is the last picture's encode time as the encoder reported it.
	LastPictureMS int       `json:"last_picture_ms,omitempty"`
	LastPicture   time.Time `json:"last_picture,omitempty"`
	LastWakeMS    int       `json:"last_wake_ms,omitempty"`
	// WokeAt is when the encoder last woke for a picture (an elastic or a
	// second PC's encoder), LastWakeMS how long that start took.
	WokeAt time.Time `json:"woke_at,omitempty"`
	// IdleStopped is when the encoder stopped after idle (EncoderIdle),
	// giving its VRAM back; zero otherwise.
	IdleStopped time.Time `json:"idle_stopped,omitempty"`
	// What the relay reported (strata-vision-relay through POST /v1/relay):
	// where the last picture was read (remote, fallback_cpu, local_cpu),
	// fallbacks to this PC's CPU (one per outage) and Wake-on-LAN attempts.
	LastWhere    string    `json:"last_where,omitempty"`
	Fallbacks    int       `json:"fallbacks,omitempty"`
	LastFallback time.Time `json:"last_fallback,omitempty"`
	Wakes        int       `json:"wakes,omitempty"`
	// LastWake is the last wake's outcome: "sent" (waiting for ssh),
	// "woke" (LastWokeMS after the packet), "no_answer".
	LastWake   string `json:"last_wake,omitempty"`
	LastWokeMS int    `json:"last_woke_ms,omitempty"`
	// Where the encoder really reads pictures, from its own start line
	// (the relay's vision.ready): "gpu" or "cpu", on which PC (Host: the
	// second PC; empty: this one), the GPU's name and the VRAM it takes
	// while it runs (the words show it only then: EncoderHoldsVRAM). An
	// unload or vision off clears them.
	Device  string `json:"device,omitempty"`
	Host    string `json:"host,omitempty"`
	GPU     string `json:"gpu,omitempty"`
	VRAMMiB int    `json:"vram_mib,omitempty"`
	// Degraded says why the encoder runs on a CPU where a GPU was expected.
	Degraded string `json:"degraded,omitempty"`
	// LastOK is the last picture's outcome (nil: none yet); Error then
	// holds its reason when it failed. A success clears a failure.
	LastOK *bool `json:"last_ok,omitempty"`
	// Relay is the pid of the relay whose reports these are: a new relay
	// (Strata restarted it) starts from nothing.
	Relay int `json:"relay,omitempty"`
	// EndedRelay is the relay Strata ended when it unloaded its model: its
	// late reports (the connection's end) are not folded.
	EndedRelay int `json:"ended_relay,omitempty"`
}

// RemoteInfo is the second PC, when vision runs there.
type RemoteInfo struct {
	Host        string    `json:"host"`
	Reachable   bool      `json:"reachable"`
	Reason      string    `json:"reason,omitempty"` // why not reachable
	RTTms       float64   `json:"rtt_ms,omitempty"`
	FreeVRAMMiB int       `json:"free_vram_mib,omitempty"`
	GPU         string    `json:"gpu,omitempty"`
	Since       time.Time `json:"since"`
	// NEmbd is the encoder's embedding width the relay last reported
	// (also recorded in the settings: the relay's READY when the mmproj
	// cannot be read).
	NEmbd int `json:"n_embd,omitempty"`
}

// ConfigInfo names the Strata install and config in use.
type ConfigInfo struct {
	StrataRoot string `json:"strata_root,omitempty"`
	Path       string `json:"path,omitempty"`
	Valid      bool   `json:"valid"`
	Problem    string `json:"problem,omitempty"`
	// Rewritten lists what someone else (Strata's setup) changed of the
	// companion's keys in the config: the relay replaced, host, api_key or
	// port dropped. Empty when the config is as the companion left it.
	Rewritten []string `json:"rewritten,omitempty"`
}

// EventsResponse is one answer of GET /v1/events?since=N&wait=S.
type EventsResponse struct {
	Events []events.Event `json:"events"`
	// Next is the since= value for the following request.
	Next uint64 `json:"next"`
	// Gap is true when events after since were already dropped: re-read /v1/state.
	Gap bool `json:"gap,omitempty"`
}

// VisionRequest is POST /v1/vision.
type VisionRequest struct {
	Placement string `json:"placement"` // gpu, cpu, remote, off; restore: the newest backup
	Device    *int   `json:"device,omitempty"`
	Threads   int    `json:"threads,omitempty"`
	Host      string `json:"host,omitempty"` // [user@]host[:port], for remote
	DryRun    bool   `json:"dry_run,omitempty"`
	// Backup (restore only): put back this backup of the config (one of its
	// own backups); "" takes the newest that differs.
	Backup string `json:"backup,omitempty"`
	// Restart the server after writing (default true in the server when nil).
	Restart *bool `json:"restart,omitempty"`
	// Config is the file the caller means; if it is not the one running,
	// the service answers 409 (a conflict) and changes nothing.
	Config string `json:"config,omitempty"`
}

// VisionResponse answers POST /v1/vision.
type VisionResponse struct {
	Diff      string `json:"diff"`
	Written   bool   `json:"written"`
	Backup    string `json:"backup,omitempty"`
	Restarted bool   `json:"restarted"`
	// RestartNeeded: the change edits Strata's config (a move to or from
	// this PC's GPU), which Strata reads only at start. A dry run says it
	// before anything is done; the tray and the CLI show Message first.
	RestartNeeded bool `json:"restart_needed"`
	// Message says what the change does, in words (restart or not).
	Message string `json:"message,omitempty"`
	// Placement is where pictures are read after the change.
	Placement string `json:"placement,omitempty"`
	// SettingsChanged: the companion's settings were saved (a move among
	// the second PC, the CPU and off changes only them).
	SettingsChanged bool `json:"settings_changed,omitempty"`
	// Notes are what the plan chose on its own (e.g. lazy_load turned off
	// because the relay encoder needs it at start), as `vision` prints them.
	Notes []string `json:"notes,omitempty"`
	// NewSecondPC names the second PC when the change named another one
	// (pair it next).
	NewSecondPC string `json:"new_second_pc,omitempty"`
}

// LogsResponse answers GET /v1/logs?tail=N.
type LogsResponse struct {
	File  string   `json:"file"`
	Lines []string `json:"lines"`
}

// Error is the body of every non-2xx answer.
type Error struct {
	Error string `json:"error"`
	// Busy: refused because Strata is answering a request; asking again
	// with confirm goes ahead.
	Busy bool `json:"busy,omitempty"`
}

// RelayReport is POST /v1/relay: what the relay learned (n_embd) or did
// (events). The relay reads the settings but never writes them: the service
// folds this into its state and its settings.
type RelayReport struct {
	// Secret is the EnvRelaySecret the relay found in its environment:
	// only a relay the service's own Strata started has it.
	Secret string         `json:"secret,omitempty"`
	Events []events.Event `json:"events,omitempty"`
	// NEmbd is the n_embd the second PC's encoder reported, 0 when unknown.
	NEmbd int `json:"n_embd,omitempty"`
}

// SettingsPatch is POST /v1/settings: a change to the companion's settings
// that needs no edit of Strata's config and no restart. Nil fields are left
// as they are.
type SettingsPatch struct {
	FallbackCPU *bool `json:"fallback_cpu,omitempty"`
	IdleStopS   *int  `json:"idle_stop_s,omitempty"`
	// Wake replaces the second PC's wake setup; MAC sets its address.
	Wake          *WakeSettings `json:"wake,omitempty"`
	MAC           *string       `json:"mac,omitempty"`
	Notifications *bool         `json:"notifications,omitempty"`
	// Measured records a trial picture's figures for one placement (the
	// wizard's Pictures page, `probe --measure`): a record, not a setting.
	Measured *MeasuredRecord `json:"measured,omitempty"`
	// Remote is refused, whatever it holds: the second PC's record (host,
	// port, user, host key, key file, folder, OS, encoder) comes only from
	// pairing and prepare, through POST /v1/remote, which checks it. The
	// field exists so the refusal can say so.
	Remote json.RawMessage `json:"remote,omitempty"`
}

// MeasuredRecord is one placement's measurement (SettingsPatch.Measured).
type MeasuredRecord struct {
	Placement   settings.Placement   `json:"placement"`
	Measurement settings.Measurement `json:"measurement"`
}

// RemoteRecord is POST /v1/remote: what the second-PC code did (pair,
// prepare, unpair), recorded by the service's backend under its lock.
// Exactly one of Pairing, Prepare, Replace or Unpair is set.
type RemoteRecord struct {
	// Pairing is a second PC just paired; the service merges it with what
	// it recorded before (the same PC keeps prepare results and choices).
	Pairing *settings.Remote `json:"pairing,omitempty"`
	// Prepare is what prepare found on the paired PC.
	Prepare *RemotePrepared `json:"prepare,omitempty"`
	// Replace sets the whole record (the wizard's Apply of its second-PC page).
	Replace *settings.Remote `json:"replace,omitempty"`
	// Unpair forgets the second PC.
	Unpair bool `json:"unpair,omitempty"`
}

// RemotePrepared is prepare.Result on the wire.
type RemotePrepared struct {
	OS          string `json:"os,omitempty"`
	Arch        string `json:"arch,omitempty"`
	RemoteDir   string `json:"remote_dir,omitempty"`
	EncoderPath string `json:"encoder_path,omitempty"`
	NEmbd       int    `json:"n_embd,omitempty"`
	// What prepare found there: its GPUs (NoGPU: none), the encoder's start.
	GPUs           []settings.RemoteGPU `json:"gpus,omitempty"`
	NoGPU          bool                 `json:"no_gpu,omitempty"`
	EncoderStartMS int                  `json:"encoder_start_ms,omitempty"`
}

// RemoteResponse answers GET and POST /v1/remote: the second PC recorded
// now (null: none).
type RemoteResponse struct {
	Remote *settings.Remote `json:"remote"`
}

// WakeSettings mirrors settings.Wake on the wire.
type WakeSettings struct {
	Enabled   bool   `json:"enabled"`
	Broadcast string `json:"broadcast,omitempty"`
	Port      int    `json:"port,omitempty"`
	WaitS     int    `json:"wait_s,omitempty"`
}

// ConfigEntry is one of the install's Strata configs (strata-<tag>.json).
type ConfigEntry struct {
	Path      string `json:"path"` // absolute path of strata-<tag>.json
	Tag       string `json:"tag"`  // "iq2_xs", "coder-iq1_m"
	ModelName string `json:"model_name,omitempty"`
	// Ready: it can run as it is (engine, model files present, valid JSON).
	Ready bool `json:"ready"`
	// Problem says why it is not ready, in words.
	Problem string `json:"problem,omitempty"`
	// Running: the one the service runs now.
	Running bool `json:"running"`
}

// ConfigList answers GET /v1/configs: the install's configs and which runs.
type ConfigList struct {
	StrataRoot string        `json:"strata_root"`
	Running    string        `json:"running,omitempty"` // path; "" = none
	Configs    []ConfigEntry `json:"configs"`
}

// ConfigRequest is POST /v1/config: run another config (or a first install
// after a bare service install).
type ConfigRequest struct {
	StrataRoot string `json:"strata_root,omitempty"` // "" = the install the service has
	Config     string `json:"config"`                // path or tag
	// IfRunning, when set, must equal the config running now, else 409
	// (never applied to the wrong file).
	IfRunning string `json:"if_running,omitempty"`
	// Confirm: go ahead even while a request is being served (else 409
	// with Busy set).
	Confirm bool `json:"confirm,omitempty"`
	DryRun  bool `json:"dry_run,omitempty"`
	// NoCarry: start the new config as it is, without carrying the
	// picture placement over (the setup, which changes it next itself).
	NoCarry bool `json:"no_carry,omitempty"`
	// NoStart: stop the old server and take the new config, but leave
	// Strata stopped (the caller starts it once it changed the config).
	NoStart bool `json:"no_start,omitempty"`
}

// ConfigResponse answers POST /v1/config.
type ConfigResponse struct {
	Previous string `json:"previous,omitempty"`
	Running  string `json:"running"`
	// Diff is the placement carried over to the new config, as a diff.
	Diff    string `json:"diff,omitempty"`
	Message string `json:"message"`
	Busy    bool   `json:"busy,omitempty"`
	// TextOnly: the new config has no vision block and no projector of its
	// own was found in the install, so it starts without pictures (Message
	// says why in words).
	TextOnly bool `json:"text_only,omitempty"`
}

// UpdateRequest is POST /v1/strata/update: check for, or run, Strata's own update.
type UpdateRequest struct {
	// Check only says whether an update exists.
	Check bool `json:"check,omitempty"`
	// Confirm: go ahead even while a request is being served (else 409 with Busy).
	Confirm bool `json:"confirm,omitempty"`
}

// UpdateResponse answers POST /v1/strata/update. The update's output lines
// come as update.progress events while it runs.
type UpdateResponse struct {
	Available bool   `json:"available"`
	Offline   bool   `json:"offline,omitempty"`
	From      string `json:"from,omitempty"` // the version before
	To        string `json:"to,omitempty"`   // the version after (or on offer, for a check)
	Updated   bool   `json:"updated,omitempty"`
	// RolledBack: the update failed and the old engine was put back.
	RolledBack bool     `json:"rolled_back,omitempty"`
	Message    string   `json:"message"`
	Busy       bool     `json:"busy,omitempty"`
	Lines      []string `json:"lines,omitempty"`
}

// RepairRequest is POST /v1/config/repair (an empty body: a dry run is
// not asked, nothing is confirmed).
type RepairRequest struct {
	// DryRun says what the repair would change and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Confirm: go ahead even while a request is being served (else 409
	// with Busy set).
	Confirm bool `json:"confirm,omitempty"`
}

// RepairResponse answers POST /v1/config/repair: the companion's placement
// and the keys Strata's setup dropped or changed (port, host, api_key, any
// other) put back into a config Strata's setup rewrote, from the
// companion's last known good config.
type RepairResponse struct {
	Diff    string `json:"diff,omitempty"`
	Message string `json:"message"`
	// Changes says, one line each, what the repair puts back (the diff in
	// words; never a secret's value).
	Changes []string `json:"changes,omitempty"`
	// From is the backup the keys come from.
	From string `json:"from,omitempty"`
	// RestartNeeded: the repair edits the config, which Strata reads only
	// at start (text stops while it starts again).
	RestartNeeded bool `json:"restart_needed,omitempty"`
	Restarted     bool `json:"restarted,omitempty"`
	Written       bool `json:"written,omitempty"`
	Busy          bool `json:"busy,omitempty"`
}
