package backend

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/settings"
)

// Low: MACs of 8 and 20 bytes, ::1, loopback, 0.0.0.0 and multicast as the
// wake broadcast, and unbounded idle_stop_s / wait_s were taken. Each is a
// 400 that says what is allowed, and the settings stay as they were.
func TestSettingsBounds(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.set(t, "remote")
	before, _ := settings.Load(f.in.Settings)
	i := func(n int) *int { return &n }
	str := func(s string) *string { return &s }
	wake := func(b string, wait int) *controlapi.WakeSettings {
		return &controlapi.WakeSettings{Enabled: true, Broadcast: b, WaitS: wait}
	}
	for name, p := range map[string]controlapi.SettingsPatch{
		"8-byte mac":        {MAC: str("aa:bb:cc:dd:ee:ff:00:11")},
		"20-byte mac":       {MAC: str("00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01")},
		"::1":               {Wake: wake("::1", 30)},
		"loopback":          {Wake: wake("127.0.0.1", 30)},
		"0.0.0.0":           {Wake: wake("0.0.0.0", 30)},
		"multicast":         {Wake: wake("224.0.0.1", 30)},
		"wait_s a day":      {Wake: wake("192.168.1.255", 86400)},
		"idle_stop_s years": {IdleStopS: i(1 << 30)},
		"idle_stop_s < 0":   {IdleStopS: i(-1)},
	} {
		_, err := f.b.PatchSettings(ctx, p)
		var re *RequestError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want a request error", name, err)
		}
	}
	after, _ := settings.Load(f.in.Settings)
	if after.Remote.MAC != before.Remote.MAC || after.Remote.IdleStopS != before.Remote.IdleStopS || (after.Remote.Wake == nil) != (before.Remote.Wake == nil) {
		t.Fatalf("refused patches changed the settings: %+v -> %+v", before.Remote, after.Remote)
	}
	for name, p := range map[string]controlapi.SettingsPatch{
		"mac":              {MAC: str("aa-bb-cc-dd-ee-ff")},
		"broadcast":        {Wake: wake("192.168.1.255", MaxWakeWaitS)},
		"limited":          {Wake: wake("255.255.255.255", 0)},
		"idle_stop_s week": {IdleStopS: i(settings.MaxIdleStopS)},
	} {
		if _, err := f.b.PatchSettings(ctx, p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
