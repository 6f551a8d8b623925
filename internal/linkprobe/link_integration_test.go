//go:build linux

package linkprobe

import (
	"context"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/testenv"
)

// TestMeasuredLinkMatchesTheImposedOneIntegration puts the second PC in a network
// namespace behind a tbf rate limit, and a delaying proxy in front of its
// sshd, and checks that the probe measures what they impose. The tolerance
// is wide (±50%): this is a shared, noisy machine; what it catches is a
// probe that measures the wrong thing (a local buffer, a process start, a
// factor of 8 between bits and bytes).
func TestMeasuredLinkMatchesTheImposedOneIntegration(t *testing.T) {
	// Not parallel: other tests' CPU use would show up as a slower link.
	if testing.Short() {
		t.Skip("makes a network namespace and moves megabytes through a slow link")
	}
	const (
		rateMbit = 16
		oneWay   = 30 * time.Millisecond
	)
	ns := testenv.NewNetns(t, testenv.NetnsOptions{RateMbit: rateMbit})
	s := testenv.StartSSHD(t, testenv.SSHDOptions{Netns: ns.Name, ListenHost: ns.PeerAddr, PathDirs: []string{fakeNvidiaSMI(t)}})
	proxy := testenv.StartDelayProxy(t, net.JoinHostPort(ns.PeerAddr, strconv.Itoa(s.Port)), oneWay)
	c := dial(t, s, proxy)

	r := Run(context.Background(), c, "pc2", Options{Pings: 9, TransferBytes: 3 << 20, StepTimeout: 60 * time.Second})
	wantRTT := 2 * oneWay
	wantRate := float64(rateMbit) * 1e6 / 8
	t.Logf("RTT %v (imposed %v), up %.2f MB/s, down %.2f MB/s (imposed %.2f MB/s); samples %v",
		r.RTT, wantRTT, r.UpBytesPerSec/1e6, r.DownBytesPerSec/1e6, wantRate/1e6, r.RTTSamples)
	within := func(got, want float64) bool { return math.Abs(got-want) <= 0.5*want }
	if !within(float64(r.RTT), float64(wantRTT)) {
		t.Errorf("RTT %v, imposed %v", r.RTT, wantRTT)
	}
	if !within(r.UpBytesPerSec, wantRate) {
		t.Errorf("upload %.2f MB/s, imposed %.2f MB/s", r.UpBytesPerSec/1e6, wantRate/1e6)
	}
	if !within(r.DownBytesPerSec, wantRate) {
		t.Errorf("download %.2f MB/s, imposed %.2f MB/s", r.DownBytesPerSec/1e6, wantRate/1e6)
	}
	// 10 MB back at 2 MB/s is ~5 s: the estimate must carry the link's cost.
	if !r.Estimate.Available || r.Estimate.PictureSeconds < 2.33+10e6/wantRate*0.5 {
		t.Errorf("estimate %+v does not reflect the slow link", r.Estimate)
	}
}
