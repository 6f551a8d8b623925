//go:build !windows

package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/remotecmd"
)

// The encoder pinned at pairing (--encoder ABSPATH) is allowed, and only it:
// another absolute path, or one reached by .., is still refused.
func TestGatePinnedEncoder(t *testing.T) {
	self := "/home/u/strata companion/strata-vision-relay"
	q := quoter(t, "linux")
	pins := gatePins{encoder: "/opt/strata/engine/strata-vision"}
	got, err := gateCheckWith(q(self, "agent", "--encoder", "/opt/strata/engine/strata-vision", "--mmproj", "mm.gguf"), self, pins)
	if err != nil || strings.Join(got, " ") != "agent --encoder /opt/strata/engine/strata-vision --mmproj /home/u/strata companion/mm.gguf" {
		t.Errorf("the pinned encoder: %q %v", got, err)
	}
	for _, enc := range []string{"/opt/strata/engine/strata-vision2", "/bin/sh", "/opt/strata/engine/../engine/x"} {
		if got, err := gateCheckWith(q(self, "agent", "--encoder", enc), self, pins); err == nil {
			t.Errorf("--encoder %s was allowed with %s pinned: %q", enc, pins.encoder, got)
		}
	}
	if _, err := gateCheckWith(q(self, "agent", "--mmproj", "/opt/strata/engine/strata-vision"), self, pins); err == nil {
		t.Error("the pinned encoder was allowed as --mmproj")
	}
	if _, err := gateCheck(q(self, "agent", "--encoder", "/opt/strata/engine/strata-vision"), self, nil); err == nil {
		t.Error("an absolute encoder was allowed with none pinned")
	}
	if got, err := gateCheck(q(self, "unpair"), self, nil); err != nil || strings.Join(got, " ") != "unpair" {
		t.Errorf("unpair: %q %v", got, err)
	}
	for _, cmd := range []string{q(self, "unpair", "--keys", "/etc/passwd"), q(self, "unpair", "x")} {
		if got, err := gateCheck(cmd, self, nil); err == nil {
			t.Errorf("%q was allowed: %q", cmd, got)
		}
	}
}

// `<agent> unpair` through the gate removes the lines whose forced command
// is this agent's gate, and nothing else: another agent's gate, a line that
// only mentions the gate in its comment, the user's own keys and comments
// stay byte for byte.
func TestGateUnpairRemovesOnlyItsOwnLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "strata companion")
	os.MkdirAll(dir, 0o700)
	self := filepath.Join(dir, "strata-vision-relay")
	os.WriteFile(self, []byte("x"), 0o755)
	gate, _ := remotecmd.Quote("linux", []string{self, "gate", "--allow", "ab", "--keys", "/h/.ssh/authorized_keys"})
	agentCmd, _ := remotecmd.Quote("linux", []string{self, "agent", "gate"})
	ours := `restrict,command="` + strings.ReplaceAll(gate, `"`, `\"`) + `",from="10.0.0.2" ssh-ed25519 AAAAcomp strata-companion@pc` + "\r\n"
	ours2 := `command="` + gate + `",restrict ssh-ed25519 AAAAcomp2 other-comment` + "\n"
	keep := "# mine\r\nssh-ed25519 AAAAuser sam@laptop\n" +
		`restrict,command="/elsewhere/strata-vision-relay gate" ssh-ed25519 AAAAx other@pc` + "\n" +
		`restrict,command="` + agentCmd + `" ssh-ed25519 AAAAy not-a-gate` + "\n" +
		`restrict ssh-ed25519 AAAAz ` + self + "-gate\n" +
		"ssh-rsa AAAAtail x"
	keys := filepath.Join(t.TempDir(), "authorized_keys")
	all := "# mine\r\n" + ours + "ssh-ed25519 AAAAuser sam@laptop\n" + ours2 + strings.TrimPrefix(keep, "# mine\r\nssh-ed25519 AAAAuser sam@laptop\n")
	os.WriteFile(keys, []byte(all), 0o600)

	var errb bytes.Buffer
	if c := gateUnpair(keys, self, &errb); c != 0 {
		t.Fatalf("unpair: %d %s", c, errb.String())
	}
	got, _ := os.ReadFile(keys)
	if string(got) != keep {
		t.Fatalf("after unpair:\n%q\nwant\n%q", got, keep)
	}
	if fi, _ := os.Stat(keys); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Dir(keys)); len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
	// Again: nothing of ours is left, nothing else changes.
	if c := gateUnpair(keys, self, &errb); c != 0 {
		t.Fatalf("unpair again: %d", c)
	}
	if got, _ := os.ReadFile(keys); string(got) != keep {
		t.Fatalf("a second unpair changed the file: %q", got)
	}
	if c := gateUnpair("", self, &errb); c == 0 || !strings.Contains(errb.String(), "your own login") {
		t.Errorf("unpair with no keys file pinned: %d %q", c, errb.String())
	}
}

func TestForcedCommand(t *testing.T) {
	for line, want := range map[string]string{
		`command="a b" ssh-ed25519 K c`:                   "a b",
		`restrict,command="x \"y\"",from="1.2.3.4" k K c`: `x "y"`,
		`from="a,b",COMMAND="z" k K c`:                    "z",
		`restrict ssh-ed25519 K command="no"`:             "",
		`ssh-ed25519 K c`:                                 "",
		`# command="x"`:                                   "",
		`command="unclosed ssh-ed25519 K c`:               "",
	} {
		if got, _ := forcedCommand(line); got != want {
			t.Errorf("%s: %q, want %q", line, got, want)
		}
	}
}
