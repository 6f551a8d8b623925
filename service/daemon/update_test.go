package daemon

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An install that is not a git checkout asks Strata's releases: a newer
// tag is an update; unreachable, it says offline and offers nothing.
func TestCheckAgainstStrataReleases(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "engine"), 0o755)
	os.WriteFile(filepath.Join(root, "engine", "BUILD.json"), []byte(`{"version": "0.1.43", "source": "prebuilt"}`), 0o644)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"tag_name": "v0.1.44"}`))
	}))
	defer srv.Close()
	old := ReleasesURL
	defer func() { ReleasesURL = old }()
	d := &Daemon{}
	ReleasesURL = srv.URL
	r := d.check(context.Background(), nil, root, "0.1.43")
	if !r.Available || r.To != "0.1.44" || r.Offline {
		t.Errorf("a newer release: %+v", r)
	}
	if r := d.check(context.Background(), nil, root, "0.1.44"); r.Available || !strings.Contains(r.Message, "up to date") {
		t.Errorf("the same release: %+v", r)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	ReleasesURL = "http://" + l.Addr().String() + "/releases/latest"
	l.Close()
	if r := d.check(context.Background(), nil, root, "0.1.43"); r.Available || !r.Offline || !strings.Contains(r.Message, "offline") {
		t.Errorf("offline: %+v", r)
	}
}
