// Package controltest serves the real control API (service/controlserver)
// on loopback for tests, as net/http/httptest is to net/http: Serve puts a
// backend behind it, Service plays a whole strata-service for its clients
// (the tray, the wizard). It lives beside controlserver, not in
// internal/testenv, so the internal libraries never import a program's
// package.
package controltest

import (
	"context"
	"net/http"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/controlapi/ownertest"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/service/controlserver"
)

// Serve serves the real control API over b (its owner often an
// ownertest.Funcs) on loopback until t ends and returns a client of it (for
// tests that put the settings' owner behind the API without a whole
// service).
func Serve(t testing.TB, b controlserver.Backend) *controlapi.Client {
	t.Helper()
	if b.Bus == nil {
		b.Bus = events.NewBus(100)
	}
	if b.Owner == nil {
		b.Owner = ownertest.Funcs{}
	}
	srv, err := controlserver.New(b)
	if err != nil {
		t.Fatal(err)
	}
	l, err := controlserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })
	return &controlapi.Client{BaseURL: "http://" + l.Addr().String(), Token: srv.Token(), HTTP: &http.Client{}}
}
