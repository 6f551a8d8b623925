package live

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kevinburke/ssh_config"

	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
)

// Remote reaches the second PC. Suggestions come from the user's
// ~/.ssh/config (through kevinburke/ssh_config, not a hand-written parser).
type Remote struct {
	// SSHConfig is the user's ssh config file (default ~/.ssh/config).
	SSHConfig string
}

// NewRemote returns the second-PC adapter.
func NewRemote() *Remote { return &Remote{} }

// errNoRemote is returned until the second-PC libraries (link probe,
// pairing, prepare) are wired in.
var errNoRemote = errors.New("reading pictures on a second PC is not available in this build of Strata Companion yet; choose this PC's GPU or CPU for now")

// Suggestions lists the concrete Host entries (no wildcards) of ~/.ssh/config.
func (r *Remote) Suggestions() []setupflow.HostSuggestion {
	path := r.SSHConfig
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		path = filepath.Join(home, ".ssh", "config")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	cfg, err := ssh_config.Decode(f)
	if err != nil {
		return nil
	}
	var out []setupflow.HostSuggestion
	seen := map[string]bool{}
	for _, h := range cfg.Hosts {
		for _, p := range h.Patterns {
			alias := p.String()
			if alias == "" || strings.ContainsAny(alias, "*?!") || seen[alias] {
				continue
			}
			seen[alias] = true
			s := setupflow.HostSuggestion{Alias: alias}
			s.HostName, _ = cfg.Get(alias, "HostName")
			s.User, _ = cfg.Get(alias, "User")
			if port, _ := cfg.Get(alias, "Port"); port != "" {
				s.Port, _ = strconv.Atoi(port)
			}
			out = append(out, s)
		}
	}
	return out
}

func (r *Remote) Probe(ctx context.Context, t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey, progress func(setupflow.Progress)) (*setupflow.RemoteReport, error) {
	return nil, errNoRemote
}

func (r *Remote) Pair(ctx context.Context, t setupflow.RemoteTarget, confirm setupflow.ConfirmHostKey, progress func(setupflow.Progress)) (*settings.Remote, error) {
	return nil, errNoRemote
}

func (r *Remote) Prepare(ctx context.Context, rm *settings.Remote, in setupflow.Install, cfg string, progress func(setupflow.Progress)) (*settings.Remote, error) {
	return nil, errNoRemote
}

func (r *Remote) Unpair(ctx context.Context, rm *settings.Remote) error { return nil }
