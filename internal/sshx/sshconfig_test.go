package sshx

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestResolveFromSSHConfig(t *testing.T) {
	dir := t.TempDir()
	home, _ := os.UserHomeDir()
	user := filepath.Join(dir, "config")
	system := filepath.Join(dir, "ssh_config")
	os.WriteFile(user, []byte(`
Host gpu-box
  HostName 192.168.1.40
  User alice
  Port 2222
  IdentityFile ~/.ssh/gpu_ed25519
  IdentityFile %d/.ssh/%r@%h

Host *.lan !printer.lan
  User lanuser

Host *
  IdentityFile ~/.ssh/fallback
`), 0o644)
	os.WriteFile(system, []byte("Host *\n  Port 2200\n  User nobody-from-system\n"), 0o644)
	missing := filepath.Join(dir, "missing")

	for _, c := range []struct {
		in    string
		want  Endpoint
		files []string
	}{
		// The alias becomes its HostName; User and Port fill the gaps.
		{in: "gpu-box", want: Endpoint{User: "alice", Host: "192.168.1.40", Port: 2222},
			files: []string{filepath.Join(home, ".ssh/gpu_ed25519"), filepath.Join(home, ".ssh/alice@gpu-box"), filepath.Join(home, ".ssh/fallback")}},
		// What the user typed wins over the config.
		{in: "bob@gpu-box:22", want: Endpoint{User: "bob", Host: "192.168.1.40", Port: 22},
			files: []string{filepath.Join(home, ".ssh/gpu_ed25519"), filepath.Join(home, ".ssh/bob@gpu-box"), filepath.Join(home, ".ssh/fallback")}},
		// Patterns and negation are the library's; the system file comes second.
		{in: "pc.lan", want: Endpoint{User: "lanuser", Host: "pc.lan", Port: 2200}, files: []string{filepath.Join(home, ".ssh/fallback")}},
		{in: "printer.lan", want: Endpoint{User: "nobody-from-system", Host: "printer.lan", Port: 2200}, files: []string{filepath.Join(home, ".ssh/fallback")}},
	} {
		ep, err := ParseEndpoint(c.in)
		if err != nil {
			t.Fatal(err)
		}
		got, hc, err := Resolve(ep, user, missing, system)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got != c.want || !reflect.DeepEqual(hc.IdentityFiles, c.files) {
			t.Errorf("Resolve(%s) = %+v %q, want %+v %q", c.in, got, hc.IdentityFiles, c.want, c.files)
		}
	}

	// No config at all: the local user, as ssh does.
	got, _, err := Resolve(Endpoint{Host: "x"}, missing)
	if err != nil || got.User == "" || got.Host != "x" || got.Port != 0 {
		t.Errorf("no config: %+v, %v", got, err)
	}

	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("Host x\n  Port notaport\n"), 0o644)
	if _, _, err := Resolve(Endpoint{Host: "x"}, bad); err == nil {
		t.Error("a non-numeric Port was accepted")
	}
}
