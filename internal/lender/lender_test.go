package lender

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/lend"
)

// What the code lets a PC ask for: a key and a line of the companion's own,
// never a name that would replace or remove the account's own lines.
func TestCheckRequest(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	sk, _ := ssh.NewPublicKey(pub)
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sk)))
	good := lend.Request{PublicKey: key, Comment: "strata-companion@desk", From: "desk"}
	if _, err := checkRequest(good); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	for name, r := range map[string]lend.Request{
		"the owner's own line's name": {PublicKey: key, Comment: "owner@phone"},
		"an option in the key":        {PublicKey: `command="id" ` + key, Comment: "strata-companion@x"},
		"two keys":                    {PublicKey: key + "\n" + key, Comment: "strata-companion@x"},
		"a space in the name":         {PublicKey: key, Comment: "strata-companion@x y"},
		"no sha256 sum":               {PublicKey: key, Comment: "strata-companion@x", Allow: []string{"abc"}},
		"a relative encoder":          {PublicKey: key, Comment: "strata-companion@x", Encoder: "bin/strata-vision"},
		"a two-line name":             {PublicKey: key, Comment: "strata-companion@x", From: "a\nb"},
	} {
		if _, err := checkRequest(r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The dry run's steps: the Windows firewall rule is for the Private profile
// and the local subnet only, and every undo step undoes one lend made.
func TestPlanAndUndo(t *testing.T) {
	o := Options{User: "gamer", SSHPort: 22, PairPort: lend.DefaultPairPort, Valid: lend.DefaultValid}
	var win strings.Builder
	for _, s := range Plan("windows", o) {
		win.WriteString(s.String() + "\n")
	}
	if !strings.Contains(win.String(), "profile=private") || !strings.Contains(win.String(), "remoteip=localsubnet") || strings.Contains(win.String(), "public") {
		t.Errorf("the Windows plan:\n%s", win.String())
	}
	kept := &Record{SSHServer: "kept", AgentDir: "/home/gamer/strata-companion"}
	if u := UndoPlan("linux", kept); len(u) != 3 {
		t.Errorf("an ssh server that ran before lend is left alone; undo: %v", u)
	}
	enabled := &Record{SSHServer: "ssh.service", SSHEnabled: true}
	if u := UndoPlan("linux", enabled); len(u) != 4 || strings.Join(u[3].Argv, " ") != "systemctl disable --now ssh.service" {
		t.Errorf("undo of an enabled ssh server: %v", u)
	}
	w := &Record{SSHServer: "sshd", SSHEnabled: true, FirewallRule: FirewallRuleName}
	if u := UndoPlan("windows", w); len(u) != 6 || u[3].Argv[0] != "netsh.exe" {
		t.Errorf("the Windows undo: %v", u)
	}
}
