// Package strataconfig reads and edits Strata's config file
// (ROOT/strata-<tag>.json) without losing a byte of what the companion does
// not own: edits are spliced into the JSON text, so unknown keys, key order
// and formatting survive, and a round trip with no change is byte-identical.
package strataconfig

import (
	"errors"

	"github.com/strata-companion/companion/internal/settings"
)

// VisionRequest says where the image encoder should run.
type VisionRequest struct {
	Placement    settings.Placement // gpu, cpu, remote, off
	Device       *int               // gpu: cuda_device (another GPU); nil keeps what is there, < 0 removes it
	Threads      int                // cpu: 0 = keep the config's value, else half the cores
	Host         string             // remote: [user@]host[:port] (recorded in the companion settings by the caller)
	RelayExe     string             // remote: absolute path of strata-vision-relay ("" = beside os.Executable())
	SettingsPath string             // remote: the companion settings file, put in env as STRATA_COMPANION_SETTINGS
	VRAMTotalMiB int                // 0 unknown; <= 12288 => --vram-reserve-mib 1000, else 700 (when the arg is absent)
}

// Change is a planned edit of one config file.
type Change struct {
	Path     string
	Old, New []byte
}

var errTODO = errors.New("strataconfig: not implemented yet")

// PlanVision validates everything and returns the edit; it writes nothing.
func PlanVision(configPath string, req VisionRequest) (*Change, error) { return nil, errTODO }

// Diff is a human unified-style diff ("" when nothing changes).
func (c *Change) Diff() string { return "" }

// Apply backs the file up and writes the new bytes atomically.
func (c *Change) Apply() (backup string, err error) { return "", errTODO }

// Restore puts the newest backup back.
func Restore(configPath string) (restoredFrom string, err error) { return "", errTODO }

// Config is a parsed view of a config file.
type Config struct {
	Path string
}

// Read parses configPath.
func Read(configPath string) (*Config, error) { return nil, errTODO }

// Placement is where the config runs the encoder.
func (c *Config) Placement() settings.Placement { return settings.PlacementOff }
