package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
)

// PatchSettings applies POST /v1/settings: settings that need no config
// edit and no restart (the relay reads them per picture).
func (b *Backend) PatchSettings(ctx context.Context, p controlapi.SettingsPatch) (*settings.Settings, error) {
	var what []string
	if p.IdleStopS != nil && (*p.IdleStopS < 0 || *p.IdleStopS > settings.MaxIdleStopS) {
		return nil, &RequestError{fmt.Errorf("idle_stop_s must be 0 (never stop) to %d (a week)", settings.MaxIdleStopS)}
	}
	if p.MAC != nil && *p.MAC != "" {
		if err := CheckMAC(*p.MAC); err != nil {
			return nil, &RequestError{err}
		}
	}
	if w := p.Wake; w != nil {
		if w.Port < 0 || w.Port > 65535 || w.WaitS < 0 || w.WaitS > MaxWakeWaitS {
			return nil, &RequestError{fmt.Errorf("wake: port must be 1-65535 (0: 9) and wait_s 0 to %d", MaxWakeWaitS)}
		}
		if w.Broadcast != "" {
			if err := CheckBroadcast(w.Broadcast); err != nil {
				return nil, &RequestError{err}
			}
		}
	}
	if m := p.Measured; m != nil {
		if !m.Placement.ReadsPictures() {
			return nil, &RequestError{fmt.Errorf("measured: placement must be gpu, cpu or remote, not %q", m.Placement)}
		}
		if err := m.Measurement.Check(); err != nil {
			return nil, &RequestError{err}
		}
	}
	if p.Remote != nil {
		return nil, &RequestError{errors.New("remote: the settings take no second-PC record; it comes only from pairing and prepare (strata-service remote pair, then remote prepare, or the setup wizard's second-PC page), which check the host key and the system there")}
	}
	needRemote := p.IdleStopS != nil || p.Wake != nil || p.MAC != nil
	for _, f := range []struct {
		name string
		set  bool
	}{{"fallback_cpu", p.FallbackCPU != nil}, {"notifications", p.Notifications != nil}, {"idle_stop_s", p.IdleStopS != nil}, {"mac", p.MAC != nil}, {"wake", p.Wake != nil}, {"measured", p.Measured != nil}} {
		if f.set {
			what = append(what, f.name)
		}
	}
	if len(what) == 0 {
		return nil, &RequestError{errors.New("the patch changes nothing: set fallback_cpu, notifications, idle_stop_s, mac, wake or measured")}
	}
	return b.Update(ctx, "settings changed: "+strings.Join(what, ", "), func(s *settings.Settings) error {
		if needRemote && (s.Remote == nil || s.Remote.Host == "") {
			return &RequestError{errors.New("no second PC is set up yet: pair one first (strata-service remote pair [user@]host), then set its idle stop, wake or MAC")}
		}
		if p.FallbackCPU != nil {
			s.FallbackCPU = p.FallbackCPU
		}
		if p.Notifications != nil {
			s.Notifications = p.Notifications
		}
		if p.IdleStopS != nil {
			s.Remote.IdleStopS = *p.IdleStopS
		}
		if p.MAC != nil {
			s.Remote.MAC = strings.ToLower(*p.MAC)
		}
		if m := p.Measured; m != nil {
			s.SetMeasured(m.Placement, m.Measurement)
		}
		if w := p.Wake; w != nil {
			nw := &settings.Wake{Enabled: w.Enabled, Broadcast: w.Broadcast, Port: w.Port, WaitS: w.WaitS}
			if old := s.Remote.Wake; old != nil {
				nw.Extra = old.Extra // a newer version's keys under wake stay
			}
			s.Remote.Wake = nw
		}
		return nil
	})
}

// MaxWakeWaitS bounds how long a picture waits for a woken PC (Strata's own
// request would have given up long before). The idle stop's bound is
// settings.MaxIdleStopS, the one the CLI and the wizard parse with.
const MaxWakeWaitS = 600

// CheckMAC accepts a network card's address: exactly 6 bytes
// (aa:bb:cc:dd:ee:ff), the only kind a wake-on-LAN packet carries.
func CheckMAC(s string) error {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return fmt.Errorf("mac %q is not a network card's address (6 bytes): write it as aa:bb:cc:dd:ee:ff", s)
	}
	return nil
}

// CheckBroadcast accepts where a wake packet may go: an IPv4 address on
// the network (a broadcast such as 192.168.1.255, 255.255.255.255, or the
// PC's own address), never loopback, multicast or 0.0.0.0.
func CheckBroadcast(s string) error {
	ip := net.ParseIP(s)
	switch {
	case ip == nil || ip.To4() == nil:
		return fmt.Errorf("wake: broadcast %q is not an IPv4 address (e.g. 192.168.1.255)", s)
	case ip.IsLoopback(), ip.IsMulticast(), ip.IsUnspecified():
		return fmt.Errorf("wake: broadcast %s is not on the network (loopback, multicast and 0.0.0.0 are refused): use the network's broadcast address, e.g. 192.168.1.255", s)
	}
	return nil
}

// RelayReport takes what the relay learned or did: n_embd goes into the
// settings (the relay's READY fallback next time), then the relay's events
// are published, in order, after the settings are on disk.
func (b *Backend) RelayReport(ctx context.Context, r controlapi.RelayReport) error {
	if r.NEmbd < 0 {
		return &RequestError{errors.New("n_embd must be positive (0: unknown)")}
	}
	if r.NEmbd > 0 {
		if _, err := b.Update(ctx, fmt.Sprintf("the second PC's encoder reported n_embd %d", r.NEmbd), func(s *settings.Settings) error {
			if s.Remote != nil {
				s.Remote.NEmbd = r.NEmbd
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, e := range r.Events {
		if e.Kind == "" {
			continue
		}
		b.publish(e)
	}
	return nil
}
