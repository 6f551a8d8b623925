package controlserver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-companion/companion/internal/account"
	"github.com/strata-companion/companion/internal/events"
)

// The files: the read token for everyone, the operator's for the owner,
// the relay's for the account that runs Strata; the address last. When the
// service takes an install another account owns, the operator token's file
// and the refusals follow (SetOwner).
func TestPublishedTokens(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the files are given to other accounts")
	}
	rec := &recorder{}
	s, c := serve(t, rec.backend(events.NewBus(10)))
	dir := t.TempDir()
	f := Files{Addr: filepath.Join(dir, "control-addr"), Read: filepath.Join(dir, "control-token"),
		Operator: filepath.Join(dir, "control-operator-token"), Relay: filepath.Join(dir, "relay-token")}
	ann := &account.Account{Name: "ann", UID: 65534, GID: 65534}
	relay := &account.Account{Name: "strata", UID: 65533, GID: 65533}
	if err := s.Publish(f, "127.0.0.1:1", ann, relay); err != nil {
		t.Fatal(err)
	}
	check := func(file, tok string, uid uint32, mode os.FileMode) {
		t.Helper()
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(file)
		if got := st.Sys().(*syscall.Stat_t).Uid; got != uid || st.Mode().Perm() != mode || strings.TrimSpace(string(b)) != tok {
			t.Errorf("%s: uid %d mode %o, want uid %d mode %o (and its token)", filepath.Base(file), got, st.Mode().Perm(), uid, mode)
		}
	}
	check(f.Read, s.ReadToken(), 0, 0o644)
	check(f.Operator, s.Token(), 65534, 0o400)
	check(f.Relay, s.RelayToken(), 65533, 0o400)
	if code, msg := call(t, c.BaseURL, s.ReadToken(), "POST", "/v1/vision", `{}`); code != 403 || !strings.Contains(msg, "ann (the Strata install's owner)") {
		t.Errorf("the refusal: %d %q", code, msg)
	}
	// Another install, an administrator's: the owner loses the token.
	if err := s.SetOwner(nil); err != nil {
		t.Fatal(err)
	}
	check(f.Operator, s.Token(), 0, 0o400)
	if code, msg := call(t, c.BaseURL, s.ReadToken(), "POST", "/v1/vision", `{}`); code != 403 || strings.Contains(msg, "ann") || !strings.Contains(msg, "is for the administrators") {
		t.Errorf("the refusal after the switch: %d %q", code, msg)
	}
	s.Unpublish(f, "127.0.0.1:1")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left after Unpublish: %v", ents)
	}
}
