//go:build linux

package cli

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/backend"
	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/filelock"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/testenv"
)

// envChildCLI makes the test binary act as strata-service (for tests that
// need the CLI in another process).
const envChildCLI = "STRATA_SERVICE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(envChildCLI) == "1" {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// visionRoot is a fake install whose config reads pictures on the GPU
// (fakestrata's Vision), with a stand-in relay beside this test binary
// (where the service looks for it).
func visionRoot(t *testing.T) *fakestrata.Root {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	relay := filepath.Join(filepath.Dir(self), "strata-vision-relay")
	if err := testenv.WriteExecutable(relay, []byte(fakestrata.EncoderScript)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(relay) })
	return fakestrata.NewRoot(t, fakestrata.RootOptions{Vision: true})
}

// agreement reads the config, the settings and /v1/state and says whether
// they name the same placement.
func agreement(ctx context.Context, c *controlapi.Client, cfg string) (string, error) {
	conf, err := strataconfig.Read(cfg)
	if err != nil {
		return "", err
	}
	s, err := settings.Load(locations.SettingsFile())
	if err != nil {
		return "", err
	}
	st, err := c.State(ctx)
	if err != nil {
		return "", err
	}
	file := backend.Placement(conf, s)
	if string(file) != st.Vision.Placement || s.Vision != file {
		return "", fmt.Errorf("file=%s (relay: %v) settings=%s state=%s", file, conf.NamesRelay(), s.Vision, st.Vision.Placement)
	}
	return string(file), nil
}

// The check: 12 clients post different placements at once, 20
// rounds; after each round the config, the settings and /v1/state agree,
// and every answer is 200, or 409 with a reason (never 500).
func TestConcurrentPlacementsAgree(t *testing.T) {
	r := visionRoot(t)
	c, _ := startRun(t, r)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)
	places := []string{"gpu", "cpu", "remote", "off"}
	var ok, conflicts int
	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var bad []string
		for i := 0; i < 12; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := controlapi.VisionRequest{Placement: places[(i+round)%len(places)]}
				if req.Placement == "remote" {
					req.Host = "me@pc2.lan"
				}
				// Restart on a few only, so rounds stay short; the
				// state must agree either way.
				if i%4 != 0 {
					no := false
					req.Restart = &no
				}
				_, err := c.SetVision(ctx, req)
				mu.Lock()
				defer mu.Unlock()
				var se *controlapi.StatusError
				switch {
				case err == nil:
					ok++
				case errors.As(err, &se) && se.Code == 409 && len(se.Message) > 20:
					conflicts++
				default:
					bad = append(bad, fmt.Sprintf("%s: %v", req.Placement, err))
				}
			}()
		}
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("round %d: answers other than 200/409: %v", round, bad)
		}
		if _, err := agreement(ctx, c, r.Config); err != nil {
			t.Fatalf("round %d: they disagree: %v", round, err)
		}
	}
	t.Logf("%d answers 200, %d answers 409", ok, conflicts)
}

// childCLI runs the test binary as strata-service in another process.
func childCLI(t *testing.T, bin string, cred *syscall.Credential, args ...string) (*exec.Cmd, *strings.Builder) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), envChildCLI+"=1")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd, out
}

// A second `run` on the same state folder exits non-zero within 1 s naming
// the first one's PID; the first stays reachable at the same address with
// the same token.
func TestSecondRunRefusesAndTheFirstStaysReachable(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	c, _ := startRun(t, r)
	addr, _ := os.ReadFile(locations.ControlAddrFile())
	token, _ := os.ReadFile(locations.ControlTokenFile())
	self, _ := os.Executable()
	cmd, out := childCLI(t, self, nil, "run", "--foreground", "--strata-root", r.Dir, "--config", r.Config)
	start := time.Now()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		took := time.Since(start)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("the second run exited with %v:\n%s", err, out)
		}
		if !strings.Contains(out.String(), "process "+strconv.Itoa(os.Getpid())) {
			t.Fatalf("the refusal does not name the first PID %d:\n%s", os.Getpid(), out)
		}
		t.Logf("refused in %v: %s", took, strings.TrimSpace(out.String()))
	case <-time.After(15 * time.Second): // a refusal is immediate; a second owner would run on
		cmd.Process.Kill()
		<-done
		t.Fatalf("the second run was still running after 15 s:\n%s", out)
	}
	if a, _ := os.ReadFile(locations.ControlAddrFile()); string(a) != string(addr) {
		t.Fatal("the second run changed control-addr")
	}
	if tk, _ := os.ReadFile(locations.ControlTokenFile()); string(tk) != string(token) {
		t.Fatal("the second run changed control-token")
	}
	if _, err := c.State(context.Background()); err != nil {
		t.Fatalf("the first service is no longer reachable: %v", err)
	}
}

// watchDir watches dir with inotify; the returned function stops the watch
// and lists the files renamed into dir (an atomic write's last step).
func watchDir(t *testing.T, dir string) func() []string {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MOVED_TO|syscall.IN_CLOSE_WRITE); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	return func() []string {
		defer syscall.Close(fd)
		var names []string
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if n <= 0 || err != nil {
				return names
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				mask := binary.LittleEndian.Uint32(buf[off+4:])
				l := int(binary.LittleEndian.Uint32(buf[off+12:]))
				name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+l]), "\x00")
				if mask&syscall.IN_MOVED_TO != 0 {
					names = append(names, name)
				}
				off += syscall.SizeofInotifyEvent + l
			}
		}
	}
}

// `settings` goes through POST /v1/settings when the service runs (the
// service publishes settings.changed), and hosts the backend when none does.
func TestSettingsCommand(t *testing.T) {
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{})
	c, _ := startRun(t, r)
	ctx := context.Background()
	st, _ := c.State(ctx)
	since := st.Seq
	out := &syncBuf{}
	if code := Main(ctx, []string{"settings", "--fallback-cpu", "on"}, strings.NewReader(""), out, out); code != 0 || !strings.Contains(out.String(), "The service saved") {
		t.Fatalf("settings: %d\n%s", code, out.String())
	}
	follow(t, c, &since, backend.SettingsChanged)
	s, _ := settings.Load(locations.SettingsFile())
	if s.FallbackCPU == nil || !*s.FallbackCPU {
		t.Fatalf("fallback_cpu not saved: %+v", s)
	}
	out = &syncBuf{}
	if code := Main(ctx, []string{"settings", "--idle-stop-s", "30"}, strings.NewReader(""), out, out); code != 1 || !strings.Contains(out.String(), "pair one first") {
		t.Fatalf("idle stop with no second PC: %d\n%s", code, out.String())
	}
	// The relay's report: its events come out of /v1/events.
	if err := c.ReportRelay(ctx, controlapi.RelayReport{NEmbd: 2560, Events: []events.Event{{Kind: events.RemoteUnreachable, Message: "pc2 is off"}}}); err != nil {
		t.Fatal(err)
	}
	follow(t, c, &since, events.RemoteUnreachable)
	var se *controlapi.StatusError
	if err := c.ReportRelay(ctx, controlapi.RelayReport{NEmbd: -1}); !errors.As(err, &se) || se.Code != 400 {
		t.Fatalf("a bad report: %v", err)
	}
	out = &syncBuf{}
	if code := Main(ctx, []string{"settings", "--wake-port", "9"}, strings.NewReader(""), out, out); code != 2 {
		t.Fatalf("--wake-port without --wake: %d\n%s", code, out.String())
	}
}

// Another process holding the settings lock (a CLI hosting the backend, say)
// makes POST /v1/vision answer 409 naming it, not 500; nothing is written.
func TestVisionWhileTheLockIsHeldIs409(t *testing.T) {
	r := visionRoot(t)
	c, _ := startRun(t, r)
	l, err := filelock.TryLock(backend.LockPath(locations.SettingsFile()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	l.WritePID()
	before, _ := os.ReadFile(r.Config)
	_, err = c.SetVision(context.Background(), controlapi.VisionRequest{Placement: "off"})
	var se *controlapi.StatusError
	if !errors.As(err, &se) || se.Code != 409 || !strings.Contains(se.Message, strconv.Itoa(os.Getpid())) || !strings.Contains(se.Message, "try again") {
		t.Fatalf("err = %v, want a 409 naming process %d", err, os.Getpid())
	}
	if after, _ := os.ReadFile(r.Config); string(after) != string(before) {
		t.Fatal("the config was written while the lock was held")
	}
}
