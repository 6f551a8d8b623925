# Strata Companion. `make run` and `make test` install what they need themselves
# (Debian packages through scripts/install-deps.sh; Go modules through the proxy).

SHELL := /bin/bash
VERSION := $(shell sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
PKG := github.com/strata-companion/companion
LDFLAGS := -s -w -X $(PKG)/internal/version.Version=$(VERSION)
# Same flags everywhere, so fyne's GLFW is compiled once (fyne package uses -trimpath).
GOBUILD := go build -trimpath
WIN := bin/windows-amd64
WINENV := GOOS=windows GOARCH=amd64

.PHONY: all deps build build-linux build-windows test test-short vet run installer clean

all: build

deps:
	@bash scripts/install-deps.sh

build: build-linux build-windows

build-linux: deps
	CGO_ENABLED=0 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/strata-service ./service
	CGO_ENABLED=0 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/strata-vision-relay ./relay
	CGO_ENABLED=1 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/strata-tray ./app
	CGO_ENABLED=1 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/strata-setup ./wizard

build-windows: deps
	$(WINENV) CGO_ENABLED=0 $(GOBUILD) -ldflags '$(LDFLAGS)' -o $(WIN)/strata-service.exe ./service
	$(WINENV) CGO_ENABLED=0 $(GOBUILD) -ldflags '$(LDFLAGS)' -o $(WIN)/strata-vision-relay.exe ./relay
	$(WINENV) CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc $(GOBUILD) -ldflags '$(LDFLAGS) -H=windowsgui' -o $(WIN)/strata-tray.exe ./app
	$(WINENV) CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc $(GOBUILD) -ldflags '$(LDFLAGS) -H=windowsgui' -o $(WIN)/strata-setup.exe ./wizard

vet: deps
	go vet ./...

# All the tests: vet, then every package with the race detector.
test: vet
	go test -race -count=1 -timeout 20m ./...

# The fast part only (no real sshd, Xvfb, systemd): for a quick loop while editing.
test-short:
	go test -short ./...

run: build-linux
	./bin/strata-service probe
	./bin/strata-service status

clean:
	rm -rf bin dist
