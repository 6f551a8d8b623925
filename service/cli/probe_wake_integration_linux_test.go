//go:build linux

package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/testenv"
)

// `probe --ssh` says whether the paired PC can be woken (MAC recorded, wake
// on), what to do when it cannot, and says it too when the PC does not
// answer (asleep is when it matters).
func TestProbeSSHShowsWakeSetupIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real sshd")
	}
	isolate(t)
	s := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{fakeSMIDir(t)}})
	target := s.User + "@" + s.Addr()
	paired := &settings.Settings{Remote: &settings.Remote{Host: s.Host, Port: s.Port, User: s.User,
		HostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostSigner.PublicKey()))), KeyFile: s.ClientKeyFile}}
	if err := paired.Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}
	out, _, code := remoteCLI(t, "", "probe", "--ssh", target, "--transfer-mb", "1", "--accept-host-key", ssh.FingerprintSHA256(s.HostSigner.PublicKey()))
	if code != 0 || !strings.Contains(out, "Wake   not set up: no network card address (MAC) recorded") {
		t.Fatalf("paired without a MAC: exit %d\n%s", code, out)
	}
	if _, errOut, code := remoteCLI(t, "", "settings", "--mac", "AA:BB:CC:DD:EE:01"); code != 0 {
		t.Fatalf("settings --mac: %d %s", code, errOut)
	}
	out, _, _ = remoteCLI(t, "", "probe", "--ssh", target, "--transfer-mb", "1")
	if !strings.Contains(out, "Wake   not set up (MAC aa:bb:cc:dd:ee:01 recorded): wake is off: turn it on with strata-service settings --wake on") {
		t.Fatalf("MAC but wake off:\n%s", out)
	}
	if _, errOut, code := remoteCLI(t, "", "settings", "--wake", "on", "--wake-broadcast", "192.168.7.255", "--wake-wait-s", "90"); code != 0 {
		t.Fatalf("settings --wake on: %d %s", code, errOut)
	}
	out, _, _ = remoteCLI(t, "", "probe", "--ssh", target, "--transfer-mb", "1", "--json")
	var j sshProbeOutput
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.Wake == nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if w := *j.Wake; !w.Ready || w.MAC != "aa:bb:cc:dd:ee:01" || w.Broadcast != "192.168.7.255" || w.Port != 9 || w.WaitS != 90 || w.Hint != "" {
		t.Errorf("--json wake %+v", w)
	}
	s.Stop() // asleep
	out, _, code = remoteCLI(t, "", "probe", "--ssh", target, "--connect-timeout", "2s")
	if code != 1 || !strings.Contains(out, "NOT reachable") || !strings.Contains(out, "Wake   set up: a magic packet for aa:bb:cc:dd:ee:01 to 192.168.7.255 port 9") {
		t.Errorf("PC off: exit %d\n%s", code, out)
	}
}
