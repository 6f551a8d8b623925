// Package settings is the companion's own settings file: which Strata install
// and config it manages, where vision runs, and the second PC. It holds no
// secrets: the relay's key is a path to a file in the secrets folder.
package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/strata-companion/companion/internal/atomicfile"
	"github.com/strata-companion/companion/internal/locations"
)

// Placement is where Strata's image encoder runs.
type Placement string

const (
	PlacementGPU    Placement = "gpu"
	PlacementCPU    Placement = "cpu"
	PlacementRemote Placement = "remote"
	PlacementOff    Placement = "off"
)

// Valid reports whether p is one of the four placements.
func (p Placement) Valid() bool {
	switch p {
	case PlacementGPU, PlacementCPU, PlacementRemote, PlacementOff:
		return true
	}
	return false
}

// Remote is the second PC that reads pictures.
type Remote struct {
	// Host, Port, User: where to reach it over ssh.
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
	User string `json:"user,omitempty"`
	// HostKey is the pinned host key in authorized_keys form
	// ("ssh-ed25519 AAAA..."); the companion's known_hosts holds it too.
	HostKey string `json:"host_key,omitempty"`
	// KeyFile is the companion's own private key for this PC (in the
	// secrets folder).
	KeyFile string `json:"key_file,omitempty"`
	// RemoteDir is the folder on the second PC holding the agent, the
	// mmproj, the vocabulary stub and strata-vision.
	RemoteDir string `json:"remote_dir,omitempty"`
	// OS and Arch of the second PC as last probed ("linux"/"windows", "amd64"/"arm64").
	OS   string `json:"os,omitempty"`
	Arch string `json:"arch,omitempty"`
	// EncoderPath is strata-vision on the second PC (absolute, or relative to RemoteDir).
	EncoderPath string `json:"encoder_path,omitempty"`
	// IdleStopS stops the remote encoder after this many seconds without a
	// picture, giving that PC its VRAM back; 0 keeps it running.
	IdleStopS int `json:"idle_stop_s,omitempty"`
	// NEmbd is the last n_embd the agent reported (the relay's READY fallback).
	NEmbd int `json:"n_embd,omitempty"`
	// MAC is the second PC's network card (aa:bb:cc:dd:ee:ff), recorded at
	// pairing, for Wake-on-LAN.
	MAC string `json:"mac,omitempty"`
	// Wake says whether and how the relay wakes a second PC that does not answer.
	Wake *Wake `json:"wake,omitempty"`

	// What prepare found there: its NVIDIA GPUs (none recorded: not asked
	// yet, see NoGPU) and how long its encoder took to start.
	GPUs  []RemoteGPU `json:"gpus,omitempty"`
	NoGPU bool        `json:"no_gpu,omitempty"` // prepare asked and found no NVIDIA GPU
	// EncoderStartMS is the encoder's start (a GPU's warm-up) as prepare
	// measured it; the relay's bound on a start follows it.
	EncoderStartMS int `json:"encoder_start_ms,omitempty"`
	// The user's choices for its encoder (zero: the relay decides).
	// Device: "" its GPU when it has a usable one, else its CPU; "gpu";
	// "cpu". CUDADevice picks the GPU by nvidia-smi index. MaxTokens: image
	// tokens per picture (default 1024 on a GPU, 300 on a CPU). Threads: CPU
	// encoder threads (default: half that PC's cores).
	Device     string `json:"device,omitempty"`
	CUDADevice *int   `json:"cuda_device,omitempty"`
	MaxTokens  int    `json:"max_tokens,omitempty"`
	Threads    int    `json:"threads,omitempty"`

	// Extra holds the keys of the file's "remote" object that this
	// version does not know (a newer companion's); they are written back
	// unchanged (see unknown.go).
	Extra map[string]json.RawMessage `json:"-"`
}

// RemoteGPU is one NVIDIA GPU prepare found on the second PC. It stays a
// type of its own, not nvsmi.GPU, because it is what the settings file
// records (and the control API carries, controlapi.RemotePrepared): those
// three keys only, with the keys a newer companion wrote kept in Extra.
type RemoteGPU struct {
	Index    int    `json:"index"`
	Name     string `json:"name"`
	TotalMiB int    `json:"total_mib,omitempty"`

	// Extra holds the unknown keys of a "remote.gpus" entry (see Remote.Extra).
	Extra map[string]json.RawMessage `json:"-"`
}

// Devices the second PC's encoder may be told to use (Remote.Device).
const (
	DeviceAuto = ""
	DeviceGPU  = "gpu"
	DeviceCPU  = "cpu"
)

// Wake is the Wake-on-LAN setup for the second PC.
type Wake struct {
	Enabled bool `json:"enabled"`
	// Broadcast is where the magic packet goes (default 255.255.255.255).
	Broadcast string `json:"broadcast,omitempty"`
	// Port is the UDP port (default 9).
	Port int `json:"port,omitempty"`
	// WaitS bounds how long a picture waits for ssh after a wake (default 60).
	WaitS int `json:"wait_s,omitempty"`

	// Extra holds the unknown keys of "remote.wake" (see Remote.Extra).
	Extra map[string]json.RawMessage `json:"-"`
}

// Settings is the file's content. Unknown keys (from a newer companion) are
// kept in Extra, at every depth (Remote.Extra, Wake.Extra), and written back
// unchanged: Settings, Remote and Wake decode and encode through
// unknown.go, which takes the known keys from the structs' json tags.
type Settings struct {
	StrataRoot string    `json:"strata_root,omitempty"`
	ConfigPath string    `json:"config_path,omitempty"`
	Vision     Placement `json:"vision,omitempty"`
	Remote     *Remote   `json:"remote,omitempty"`
	// Notifications turns the tray's notifications off when false.
	Notifications *bool `json:"notifications,omitempty"`
	// FallbackCPU: when the second PC cannot be reached, the relay reads the
	// picture on this PC's CPU instead of answering ERR.
	FallbackCPU *bool `json:"fallback_cpu,omitempty"`
	// LocalEncoder is this PC's strata-vision, which the relay runs (without
	// --gpu) when pictures are read on the CPU or as the fallback.
	LocalEncoder string `json:"local_encoder,omitempty"`
	// CPUThreads for the local CPU encoder the relay runs (0: half this
	// PC's cores, as Strata's own CPU mode).
	CPUThreads int `json:"cpu_threads,omitempty"`
	// CPUMaxTokens: image tokens per picture on this PC's CPU (0: 300, as
	// Strata's own CPU mode).
	CPUMaxTokens int `json:"cpu_max_tokens,omitempty"`
	// Measured keeps the last trial picture per placement (gpu, cpu,
	// remote): measured.go.
	Measured *Measured `json:"measured,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// NotificationsOn defaults to true.
func (s *Settings) NotificationsOn() bool { return s.Notifications == nil || *s.Notifications }

// Load reads path; a missing file gives empty settings and no error.
func Load(path string) (*Settings, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Settings{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the companion settings %s: %w", path, err)
	}
	var s Settings
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("the companion settings %s are not valid JSON (%v); fix or delete the file and run setup again", path, err)
	}
	return &s, nil
}

// LoadDefault reads the settings from their usual place.
func LoadDefault() (*Settings, error) { return Load(locations.SettingsFile()) }

// Save writes s to path atomically, creating the folder.
func (s *Settings) Save(path string) error {
	out, err := Encode(s)
	if err != nil {
		return err
	}
	return WriteBytes(path, out)
}

// Encode is the file's text for s (unknown keys kept, at every depth).
func Encode(s *Settings) ([]byte, error) {
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Empty reports whether s says nothing: the file it would write has no key
// (derived from the encoding, so a field added later counts without a list
// to keep).
func (s *Settings) Empty() bool {
	b, err := json.Marshal(s)
	return err == nil && string(b) == "{}"
}

// WriteBytes replaces the settings file at path with out atomically,
// creating the folder.
func WriteBytes(path string, out []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.Write(path, out, 0o644)
}

// SaveDefault writes the settings to their usual place.
func (s *Settings) SaveDefault() error { return s.Save(locations.SettingsFile()) }
