package controlapi

import (
	"os"
	"path/filepath"
	"testing"
)

// The owner's tray, wizard and CLI send the operator token when they may
// read it; everyone else the read token; the relay its own.
func TestClientTakesTheStrongestTokenItMayRead(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("STRATA_COMPANION_HOME", dir)
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o755)
	os.WriteFile(filepath.Join(state, "control-addr"), []byte("127.0.0.1:1\n"), 0o644)
	os.WriteFile(filepath.Join(state, "control-token"), []byte("read\n"), 0o644)
	tok := func() string {
		c, err := NewClientFrom(state)
		if err != nil {
			t.Fatal(err)
		}
		return c.Token
	}
	if got := tok(); got != "read" {
		t.Fatalf("without an operator token: %q", got)
	}
	os.WriteFile(filepath.Join(state, "control-operator-token"), []byte("op\n"), 0o400)
	if got := tok(); got != "op" {
		t.Fatalf("with the operator token readable: %q", got)
	}
	if _, err := NewRelayClient(); err == nil {
		t.Fatal("a relay client without a relay token")
	}
	os.WriteFile(filepath.Join(state, "relay-token"), []byte("relay\n"), 0o400)
	if c, err := NewRelayClient(); err != nil || c.Token != "relay" {
		t.Fatalf("the relay's client: %+v %v", c, err)
	}
}
