package events

import (
	"encoding/json"
	"reflect"
)

// An event's details have one Go type per kind, below: producers build the
// type (New) and readers decode it (Get), so a key's name and type are
// written once and the compiler holds both sides. On the wire (the control
// API, the relay's reports) Details stays a JSON object, so older clients
// and relays read and write the same bytes. Each key has one meaning across
// all kinds (TestEveryKeyHasOneMeaning): the same name is the same type.

// Payload is one kind's details.
type Payload interface{ EventKind() Kind }

// RelayMark is on every event the relay reports: its process id, so the
// service can tell one relay (one Strata start) from the next.
type RelayMark struct {
	Relay int `json:"relay,omitempty"`
}

// Source is on every event read from the server's output: "stdout" or
// "stderr".
type Source struct {
	Source string `json:"source,omitempty"`
}

type (
	ServerStartingDetails struct {
		Port   int    `json:"port,omitempty"`
		Config string `json:"config,omitempty"`
	}
	ServerProgressDetails struct {
		Source
		ElapsedS     int   `json:"elapsed_s,omitempty"`
		LeftoverPID  int   `json:"leftover_pid,omitempty"`
		LeftoverPIDs []int `json:"leftover_pids,omitempty"`
		Port         int   `json:"port,omitempty"`
	}
	ServerReadyDetails struct {
		Source
		PID     int    `json:"pid,omitempty"`
		URL     string `json:"url,omitempty"`
		Port    int    `json:"port,omitempty"`
		Model   string `json:"model,omitempty"`
		Context int    `json:"context,omitempty"`
		Version string `json:"version,omitempty"` // the running Strata's engine version
		Engine  string `json:"engine,omitempty"`  // BUILD.json's source: prebuilt or local
		Images  *bool  `json:"images,omitempty"`
		APIKey  *bool  `json:"api_key,omitempty"`
	}
	ServerExitedDetails struct {
		Code      int      `json:"code"`
		Expected  bool     `json:"expected"` // stopped on request
		PID       int      `json:"pid,omitempty"`
		LastLines []string `json:"last_lines,omitempty"`
		LastWords string   `json:"last_words,omitempty"` // Strata's own last line
	}
	ServerRestartingDetails struct {
		Attempt int     `json:"attempt,omitempty"`
		DelayS  float64 `json:"delay_s,omitempty"`
	}
	ServerFailedDetails struct {
		Reason    string   `json:"reason,omitempty"` // launch, install, ...
		Code      int      `json:"code,omitempty"`
		LastLines []string `json:"last_lines,omitempty"`
	}
	ServerStoppedDetails struct{}
	ServerForeignDetails struct {
		Port    int    `json:"port,omitempty"`
		PID     int    `json:"pid,omitempty"`
		Cmdline string `json:"cmdline,omitempty"`
		UID     int    `json:"uid,omitempty"`
		Account string `json:"account,omitempty"`
	}
	ServerLogDroppedDetails struct {
		Dropped int    `json:"dropped"`
		File    string `json:"file,omitempty"`
		Writing bool   `json:"writing"`
	}
	ModelUnloadedDetails struct {
		Source
		IdleS float64 `json:"idle_s,omitempty"`
	}
	ModelLoadedDetails struct {
		Source
		Images *bool `json:"images,omitempty"`
	}
	EngineRestartedDetails struct {
		Source
		EngineRunning bool `json:"engine_running"`
		ExitCode      int  `json:"exit_code,omitempty"`
	}
	ExpertCacheDetails struct {
		Source
		Experts int     `json:"experts,omitempty"`
		GiB     float64 `json:"gib,omitempty"`
	}
	EncoderStartingDetails struct {
		Source
		Phase string `json:"phase,omitempty"`
	}
	// EncoderReadyDetails: from the relay, where the encoder really runs
	// (its own start line); from Strata's log, which line it printed.
	EncoderReadyDetails struct {
		RelayMark
		Source
		Where          string `json:"where,omitempty"`
		Host           string `json:"host,omitempty"`
		StartMS        int64  `json:"start_ms,omitempty"`
		Device         string `json:"device,omitempty"`   // gpu, cpu
		GPU            string `json:"gpu,omitempty"`      // its name
		VRAMMiB        *int   `json:"vram_mib,omitempty"` // 0 is a figure; nil unknown
		Threads        int    `json:"threads,omitempty"`
		Tokens         int    `json:"tokens,omitempty"`
		ExpectedDevice string `json:"expected_device,omitempty"` // gpu where a GPU was expected
		Args           string `json:"args,omitempty"`
		OnGPU          *bool  `json:"on_gpu,omitempty"`     // Strata's log: the warm-up (GPU) or CPU line
		MaxTokens      int    `json:"max_tokens,omitempty"` // Strata's log: the warm-up's image tokens
	}
	EncoderWokeDetails struct {
		RelayMark
		Source
		Where    string `json:"where,omitempty"`
		Host     string `json:"host,omitempty"`
		ShrinkMS int64  `json:"shrink_ms,omitempty"`
		StartMS  int64  `json:"start_ms,omitempty"`
		EncodeMS int64  `json:"encode_ms,omitempty"`
		WakeMS   int64  `json:"wake_ms,omitempty"`
	}
	EncoderIdleStoppedDetails struct {
		RelayMark
		Source
		Where  string  `json:"where,omitempty"`
		Host   string  `json:"host,omitempty"`
		IdleS  float64 `json:"idle_s,omitempty"`
		StopMS int64   `json:"stop_ms,omitempty"`
		GrowMS int64   `json:"grow_ms,omitempty"`
	}
	EncoderFailedDetails struct {
		RelayMark
		Source
		Where  string `json:"where,omitempty"`
		Host   string `json:"host,omitempty"`
		Reason string `json:"reason,omitempty"`
		Fatal  bool   `json:"fatal,omitempty"`
		NEmbd  int    `json:"n_embd,omitempty"` // the second PC's, when it differs from READY's
	}
	// PictureEncodedDetails: one picture's outcome. OK is nil from an older
	// relay that reported only pictures read.
	PictureEncodedDetails struct {
		RelayMark
		OK       *bool  `json:"ok,omitempty"`
		Where    string `json:"where,omitempty"`
		Host     string `json:"host,omitempty"`
		MS       int64  `json:"ms,omitempty"`
		EncodeMS int64  `json:"encode_ms,omitempty"`
		Tokens   int    `json:"tokens,omitempty"`
		Error    string `json:"error,omitempty"`
	}
	EncoderDegradedDetails struct {
		RelayMark
		Where          string `json:"where,omitempty"`
		Host           string `json:"host,omitempty"`
		Device         string `json:"device,omitempty"`
		ExpectedDevice string `json:"expected_device,omitempty"`
		Reason         string `json:"reason,omitempty"`
	}
	VisionFallbackDetails struct {
		RelayMark
		Host string `json:"host,omitempty"`
	}
	// RemoteWakeDetails: OK nil when the packet was sent; then true or
	// false once the second PC answered or not.
	RemoteWakeDetails struct {
		RelayMark
		Host      string `json:"host,omitempty"`
		MAC       string `json:"mac,omitempty"`
		Broadcast string `json:"broadcast,omitempty"`
		Port      int    `json:"port,omitempty"`
		WaitS     int    `json:"wait_s,omitempty"`
		OK        *bool  `json:"ok,omitempty"`
		WokeMS    int64  `json:"woke_ms,omitempty"`
	}
	RemoteConnectedDetails struct {
		RelayMark
		Host        string  `json:"host,omitempty"`
		RTTms       float64 `json:"rtt_ms,omitempty"`
		ConnectMS   int64   `json:"connect_ms,omitempty"`
		FreeVRAMMiB int     `json:"free_vram_mib,omitempty"`
		GPU         string  `json:"gpu,omitempty"`
	}
	RemoteDisconnectedDetails struct {
		RelayMark
		Host string `json:"host,omitempty"`
	}
	RemoteReachableDetails struct {
		RelayMark
		Host        string  `json:"host,omitempty"`
		RTTms       float64 `json:"rtt_ms,omitempty"`
		FreeVRAMMiB int     `json:"free_vram_mib,omitempty"`
		GPU         string  `json:"gpu,omitempty"`
	}
	RemoteUnreachableDetails struct {
		RelayMark
		Host   string `json:"host,omitempty"`
		Reason string `json:"reason,omitempty"` // the kind of failure (sshx.Classify)
	}
	ConfigChangedDetails struct {
		Path      string `json:"path,omitempty"`
		Placement string `json:"placement,omitempty"`
		Backup    string `json:"backup,omitempty"`
		// ConfigWritten: Strata's config was rewritten (else only the
		// settings); RestartNeeded: Strata must restart to use it.
		ConfigWritten bool `json:"config_written"`
		RestartNeeded bool `json:"restart_needed"`
	}
	ConfigSwitchedDetails struct {
		Previous   string `json:"previous,omitempty"`
		Running    string `json:"running,omitempty"`
		StrataRoot string `json:"strata_root,omitempty"`
		Diff       string `json:"diff,omitempty"`
		Failed     string `json:"failed,omitempty"` // a switch back: why the target did not start
	}
	ConfigRewrittenDetails struct {
		Path     string   `json:"path,omitempty"`
		Findings []string `json:"findings,omitempty"`
	}
	SettingsChangedDetails struct {
		Path string `json:"path,omitempty"`
	}
	UpdateStartedDetails struct {
		From string `json:"from,omitempty"`
	}
	UpdateProgressDetails struct{}
	UpdateFinishedDetails struct {
		From string `json:"from,omitempty"`
		To   string `json:"to,omitempty"`
		OK   *bool  `json:"ok,omitempty"`
	}
	UpdateFailedDetails struct {
		From       string `json:"from,omitempty"`
		To         string `json:"to,omitempty"`
		RolledBack bool   `json:"rolled_back,omitempty"`
	}
)

func (ServerStartingDetails) EventKind() Kind     { return ServerStarting }
func (ServerProgressDetails) EventKind() Kind     { return ServerProgress }
func (ServerReadyDetails) EventKind() Kind        { return ServerReady }
func (ServerExitedDetails) EventKind() Kind       { return ServerExited }
func (ServerRestartingDetails) EventKind() Kind   { return ServerRestarting }
func (ServerFailedDetails) EventKind() Kind       { return ServerFailed }
func (ServerStoppedDetails) EventKind() Kind      { return ServerStopped }
func (ServerForeignDetails) EventKind() Kind      { return ServerForeign }
func (ServerLogDroppedDetails) EventKind() Kind   { return ServerLogDropped }
func (ModelUnloadedDetails) EventKind() Kind      { return ModelUnloaded }
func (ModelLoadedDetails) EventKind() Kind        { return ModelLoaded }
func (EngineRestartedDetails) EventKind() Kind    { return EngineRestarted }
func (ExpertCacheDetails) EventKind() Kind        { return ExpertCache }
func (EncoderStartingDetails) EventKind() Kind    { return EncoderStarting }
func (EncoderReadyDetails) EventKind() Kind       { return EncoderReady }
func (EncoderWokeDetails) EventKind() Kind        { return EncoderWoke }
func (EncoderIdleStoppedDetails) EventKind() Kind { return EncoderIdleStopped }
func (EncoderFailedDetails) EventKind() Kind      { return EncoderFailed }
func (PictureEncodedDetails) EventKind() Kind     { return PictureEncoded }
func (EncoderDegradedDetails) EventKind() Kind    { return EncoderDegraded }
func (VisionFallbackDetails) EventKind() Kind     { return VisionFallback }
func (RemoteWakeDetails) EventKind() Kind         { return RemoteWake }
func (RemoteConnectedDetails) EventKind() Kind    { return RemoteConnected }
func (RemoteDisconnectedDetails) EventKind() Kind { return RemoteDisconnected }
func (RemoteReachableDetails) EventKind() Kind    { return RemoteReachable }
func (RemoteUnreachableDetails) EventKind() Kind  { return RemoteUnreachable }
func (ConfigChangedDetails) EventKind() Kind      { return ConfigChanged }
func (ConfigSwitchedDetails) EventKind() Kind     { return ConfigSwitched }
func (ConfigRewrittenDetails) EventKind() Kind    { return ConfigRewritten }
func (SettingsChangedDetails) EventKind() Kind    { return SettingsChanged }
func (UpdateStartedDetails) EventKind() Kind      { return UpdateStarted }
func (UpdateProgressDetails) EventKind() Kind     { return UpdateProgress }
func (UpdateFinishedDetails) EventKind() Kind     { return UpdateFinished }
func (UpdateFailedDetails) EventKind() Kind       { return UpdateFailed }

// Payloads is the table of every kind and its details' type: every kind the
// companion publishes is here (TestEveryKindHasAPayload).
var Payloads = []Payload{
	ServerStartingDetails{}, ServerProgressDetails{}, ServerReadyDetails{}, ServerExitedDetails{}, ServerRestartingDetails{},
	ServerFailedDetails{}, ServerStoppedDetails{}, ServerForeignDetails{}, ServerLogDroppedDetails{}, ModelUnloadedDetails{},
	ModelLoadedDetails{}, EngineRestartedDetails{}, ExpertCacheDetails{}, EncoderStartingDetails{}, EncoderReadyDetails{},
	EncoderWokeDetails{}, EncoderIdleStoppedDetails{}, EncoderFailedDetails{}, PictureEncodedDetails{}, EncoderDegradedDetails{},
	VisionFallbackDetails{}, RemoteWakeDetails{}, RemoteConnectedDetails{}, RemoteDisconnectedDetails{}, RemoteReachableDetails{},
	RemoteUnreachableDetails{}, ConfigChangedDetails{}, ConfigSwitchedDetails{}, ConfigRewrittenDetails{}, SettingsChangedDetails{},
	UpdateStartedDetails{}, UpdateProgressDetails{}, UpdateFinishedDetails{}, UpdateFailedDetails{},
}

// Common are the details several kinds share, read whatever e's kind:
// the reporting relay and the second PC it talks to.
type Common struct {
	RelayMark
	Host string `json:"host,omitempty"`
}

// CommonOf reads e's Common details.
func CommonOf(e Event) Common {
	var c Common
	if len(e.Details) == 0 {
		return c
	}
	b, err := json.Marshal(e.Details)
	if err != nil {
		return c
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) == nil {
		setFields(reflect.ValueOf(&c).Elem(), raw)
	}
	return c
}

// New is an event of d's kind with d as its details.
func New(msg string, d Payload) Event {
	return Event{Kind: d.EventKind(), Message: msg, Details: ToMap(d)}
}

// ToMap is d as the wire's JSON object (nil for no details).
func ToMap(d Payload) map[string]any {
	b, err := json.Marshal(d)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}

// Get decodes e's details as T, the details' type of e's kind. A T of
// another kind, or details that do not fit T, give T's zero value (a
// client reading a newer service's event keeps what it knows).
func Get[T Payload](e Event) T {
	var d T
	if e.Kind != d.EventKind() || len(e.Details) == 0 {
		return d
	}
	b, err := json.Marshal(e.Details)
	if err != nil {
		return d
	}
	// Field by field: one detail of an unexpected type spoils only itself.
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return d
	}
	v := reflect.ValueOf(&d).Elem()
	setFields(v, raw)
	return d
}

// setFields decodes raw's members into v's fields by their json names
// (embedded structs' too), each on its own.
func setFields(v reflect.Value, raw map[string]json.RawMessage) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			setFields(v.Field(i), raw)
			continue
		}
		name := jsonName(f)
		if m, ok := raw[name]; ok && name != "" {
			p := reflect.New(f.Type)
			if json.Unmarshal(m, p.Interface()) == nil {
				v.Field(i).Set(p.Elem())
			}
		}
	}
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	return tag
}
