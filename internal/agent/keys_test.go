package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The key file edit the agent does for pairing (on Windows with ACLs; the
// editing is the same everywhere): our line replaced, others byte for byte.
func TestAuthorizedKeysAddRemove(t *testing.T) {
	f := filepath.Join(t.TempDir(), "keys")
	before := "# mine\r\nssh-ed25519 AAAAuser sam@laptop\r\nrestrict ssh-ed25519 AAAAold strata-companion@pc\r\nssh-rsa AAAAtail x"
	os.WriteFile(f, []byte(before), 0o644)
	var out, errb bytes.Buffer
	line := "restrict ssh-ed25519 AAAAnew strata-companion@pc"
	if c := AuthorizedKeys([]string{"add", "--comment", "strata-companion@pc", "--line", "-", "--file", f}, strings.NewReader(line+"\n"), &out, &errb); c != 0 {
		t.Fatalf("add: %d %s", c, errb.String())
	}
	got, _ := os.ReadFile(f)
	want := "# mine\r\nssh-ed25519 AAAAuser sam@laptop\r\nssh-rsa AAAAtail x\r\n" + line + "\r\n"
	if string(got) != want || strings.TrimSpace(out.String()) != f {
		t.Fatalf("after add:\n%q\nwant\n%q (%q)", got, want, out.String())
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if c := AuthorizedKeys([]string{"remove", "--comment", "other", "--key", "AAAAnew", "--file", f}, nil, &out, &errb); c != 0 {
		t.Fatalf("remove: %d %s", c, errb.String())
	}
	got, _ = os.ReadFile(f)
	if string(got) != "# mine\r\nssh-ed25519 AAAAuser sam@laptop\r\nssh-rsa AAAAtail x\r\n" {
		t.Fatalf("after remove (by key): %q", got)
	}
	if c := AuthorizedKeys([]string{"add", "--comment", "c", "--line", "-", "--file", f}, strings.NewReader("a\nb"), &out, &errb); c != 2 {
		t.Errorf("two lines were accepted: %d", c)
	}
	if c := AuthorizedKeys([]string{"remove", "--comment", "c", "--file", filepath.Join(t.TempDir(), "none")}, nil, &out, &errb); c != 0 {
		t.Errorf("removing from a missing file: %d %s", c, errb.String())
	}
	if ents, _ := os.ReadDir(filepath.Dir(f)); len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}
