# Strata Companion. `make run` and `make test` install what they need themselves
# (Debian packages through scripts/install-deps.sh; Go modules through the proxy).

SHELL := /bin/bash
VERSION := $(shell sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
PKG := github.com/strata-companion/companion
LDFLAGS := -s -w -X $(PKG)/internal/version.Version=$(VERSION)
# Same flags everywhere, so fyne's GLFW is compiled once (fyne package uses -trimpath).
GOBUILD := go build -trimpath

.PHONY: all deps deps-run check-demo build build-linux build-windows build-agents demo-tools test test-short vet run installer screenshots screenshots-windows bench-relay clean

all: build

# Two sets of Debian packages: what running the programs needs (make run),
# and the rest for the tests and the Windows builds (see scripts/install-deps.sh).
deps-run:
	@bash scripts/install-deps.sh run

deps:
	@bash scripts/install-deps.sh test

build: build-linux build-windows build-agents

build-linux: deps-run
	CGO_ENABLED=0 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/strata-service ./service
	CGO_ENABLED=0 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/strata-vision-relay ./relay
	CGO_ENABLED=1 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/strata-tray ./app
	CGO_ENABLED=1 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/strata-setup ./wizard

# The Windows programs with their icons, version information and manifests
# (go-winres, through the installer's build script; see docs/installer.md).
build-windows: deps
	DIST=bin bash installer/build.sh --binaries-only

# The relay's agent for every second PC `strata-service remote prepare` can set up
# (it looks in bin/<os>-<arch>/; windows/amd64 comes from build-windows).
AGENT_TARGETS := linux/amd64 linux/arm64 windows/arm64
build-agents:
	@for t in $(AGENT_TARGETS); do \
	  os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "strata-vision-relay for $$os/$$arch"; \
	  GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GOBUILD) -ldflags '$(LDFLAGS)' -o bin/$$os-$$arch/strata-vision-relay$$ext ./relay || exit 1; \
	done

# The stand-ins for what cannot exist here (the Strata server, strata-vision):
# used by `make run`'s demo and documented in docs/service.md.
demo-tools:
	CGO_ENABLED=0 $(GOBUILD) -o bin/strata-standin ./internal/fakestrata/cmd/strata-standin
	CGO_ENABLED=0 $(GOBUILD) -o bin/strata-vision-standin ./internal/fakeencoder/cmd/strata-vision-standin

# staticcheck, pinned: installed once into bin/tools/ (through the Go module
# proxy) and run for Linux and for Windows, whose own files have findings of
# their own. Its checks are in staticcheck.conf. Both runs reuse the build
# cache and staticcheck's own cache: seconds when nothing changed. That cache
# lives in bin/tools/ beside the program, not in ~/.cache: make test leaves
# nothing in the home folder (make clean removes it with the rest of bin/).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := bin/tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck
export STATICCHECK_CACHE := $(CURDIR)/bin/tools/staticcheck-cache

$(STATICCHECK):
	GOBIN=$(CURDIR)/$(dir $(STATICCHECK)) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

vet: deps $(STATICCHECK)
	go vet ./...
	$(STATICCHECK) ./...
	GOOS=windows CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc $(STATICCHECK) ./...

# All the tests: vet, then every package with the race detector. They run
# with a TMPDIR of their own: whatever a test leaves there is listed after the
# run (a failure in CI, STRATA_TEST_STRICT=1) and removed. Lock files that
# coordinate the test binaries of one run (*.lock) do not count.
# (A short name: unix socket paths under t.TempDir() stay within 108 bytes.
# Mode 1777 like /tmp: some tests run a program as another account.)
test: vet
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/st-XXXXXX"); chmod 1777 "$$tmp"; \
	shared=$$(dirname "$$tmp"); before=$$(stat -c %a "$$shared"); \
	TMPDIR=$$tmp go test -race -count=1 -timeout 40m ./...; rc=$$?; \
	for d in "$$shared:$$before" "$$tmp:1777"; do \
	  now=$$(stat -c %a "$${d%:*}"); \
	  if [ "$$now" != "$${d##*:}" ]; then \
	    echo "a test changed the mode of $${d%:*} from $${d##*:} to $$now: no test may touch a temp folder other accounts share (testenv.OpenPath opens a test's own folders)"; rc=1; \
	  fi; \
	done; \
	left=$$(find "$$tmp" -mindepth 1 -maxdepth 1 ! -name '*.lock' ! -name 'go-build*' -printf '  %f\n'); \
	rm -rf "$$tmp"; \
	if [ -n "$$left" ]; then \
	  echo "the tests left these in their TMPDIR (a test that makes a temp folder must remove it: t.TempDir, t.Cleanup):"; \
	  echo "$$left"; \
	  if [ "$$rc" = 0 ] && [ "$${STRATA_TEST_STRICT:-}" = 1 ]; then rc=1; fi; \
	fi; \
	exit $$rc

# The fast part only (no real sshd, Xvfb, systemd): for a quick loop while editing.
test-short:
	go test -short ./...

# The main job: the setup for a Strata install here, else a demo on the
# stand-in Strata server (see scripts/run.sh).
run: build-linux build-agents demo-tools
	@bash scripts/run.sh

# The demo read as a new user reads it: figures agree, suggested commands run.
check-demo: deps-run
	bash scripts/check-demo.sh

# The Windows installer: dist/StrataCompanionSetup-<version>.exe (see docs/installer.md).
installer: deps
	bash installer/build.sh

# Screenshots of every wizard page under Xvfb, into docs/ (see docs/wizard.md).
# They need the demo machine, which only a build with -tags demo links in:
# bin/strata-setup-demo, never shipped.
screenshots: deps
	CGO_ENABLED=1 $(GOBUILD) -tags demo -ldflags '$(LDFLAGS)' -o bin/strata-setup-demo ./wizard
	BIN=bin/strata-setup-demo bash wizard/screenshots.sh
	BIN=bin/strata-setup-demo STOP_AT=remote EXTRA_ENV=STRATA_SETUP_DEMO_LENDERS=none bash wizard/screenshots.sh

# The Windows first hour under wine (installer, setup, tray, uninstaller),
# clicked through unattended as make test does, with its screenshots kept
# as docs/windows-*.png (see docs/installer.md). It reuses build-windows'
# programs.
screenshots-windows: build-windows
	STRATA_WINDOWS_SHOTS=$(CURDIR)/docs STRATA_TEST_WINE=1 go test -count=1 -timeout 20m -run '^TestWindowsGUIUnderWine$$' -v ./installer/gui

# The relay against the link's limit and plain OpenSSH (root: network namespaces).
bench-relay: deps
	bash bench/relay/run.sh

clean:
	rm -rf bin dist
