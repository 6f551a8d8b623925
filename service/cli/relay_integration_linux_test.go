//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/fakestrata"
	"github.com/strata-companion/companion/internal/locations"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/strataconfig"
	"github.com/strata-companion/companion/internal/testenv"
)

// e2eBuild builds the relay and the stand-in encoder into dir.
func e2eBuild(t *testing.T, dir string) (relayBin, encoderBin string) {
	t.Helper()
	relayBin = testenv.Program(t, "github.com/strata-companion/companion/relay", testenv.BuildOptions{Dir: dir, Name: "strata-vision-relay"})
	encoderBin = testenv.Program(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin", testenv.BuildOptions{Dir: dir})
	return relayBin, encoderBin
}

// relayOf finds the relay the server started (its child running relayExe).
func relayOf(t *testing.T, serverPID int, relayExe string) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, p := range testenv.Children(serverPID) {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p)); exe == relayExe {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no strata-vision-relay among the children of the server %d", serverPID)
		}
	}
}

func procStrings(t *testing.T, pid int, file string) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// standinPicture sends one picture to the stand-in server's API, which hands
// it to its encoder exactly as Strata does (ENC <tmp>/strata-vision-XXXX/<sha>.img <same>.sve).
func standinPicture(t *testing.T, port, i int) (reply string, code int, errText string) {
	t.Helper()
	data := append([]byte("\xff\xd8\xff\xe0JFIF"), bytes.Repeat([]byte{byte(i)}, 3000+i)...)
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/standin/encode", port), "image/jpeg", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Reply string `json:"reply"`
		Error string `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	return out.Reply, resp.StatusCode, out.Error
}

// The end-to-end check through the control API: `strata-service run`
// (in process) supervises the stand-in Strata, whose config names the built
// relay; a real sshd is the second PC. remote -> cpu -> off -> remote with
// POST /v1/vision while pictures go to the stand-in server's API: each
// picture goes where the settings said at that moment (the relay's
// vision.picture `where`, in /v1/events and /v1/state), the PIDs of the
// server and of the relay never change, the relay finds the control API with
// the environment the supervised server gives it, and it writes nothing into
// Strata's engine log. The switch times and a restart's are logged
// (bench/relay/switch.sh prints them); nothing here asserts a time.
func TestVisionFollowsTheSettingsThroughTheServiceIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay, starts a real sshd and the service")
	}
	bin := t.TempDir()
	relayBin, encoderBin := e2eBuild(t, bin)
	// The service finds the relay beside itself (as the installer puts it).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	relayExe := filepath.Join(filepath.Dir(self), "strata-vision-relay")
	testenv.Copy(t, relayBin, relayExe, 0o755)
	t.Cleanup(func() { os.Remove(relayExe) })

	// Strata's side: a stand-in install reading pictures on its GPU.
	models := t.TempDir()
	mmproj, model := filepath.Join(models, "mmproj-BF16.gguf"), filepath.Join(models, "model-00001-of-00003.gguf")
	const nEmbd = 32
	fakeencoder.WriteMmproj(mmproj, nEmbd)
	fakeencoder.WriteModel(model, 20)
	r := fakestrata.NewRoot(t, fakestrata.RootOptions{Extra: map[string]any{
		"args":   []string{"-m", "model.gguf", "--vision", "--vram-reserve-mib", "700"},
		"vision": map[string]any{"exe": "engine/strata-vision", "mmproj": mmproj, "model": model, "gpu": true, "max_tokens": 6},
	}})
	// Strata's own encoder (ROOT/engine/strata-vision): the GPU placement's,
	// and the one the relay runs on this PC's CPU.
	localEncoder := filepath.Join(r.Dir, "engine", "strata-vision")
	testenv.Copy(t, encoderBin, localEncoder, 0o755)

	// The second PC: a real sshd, an NVIDIA GPU (the stand-in nvidia-smi on
	// its PATH) and the folder `remote prepare` leaves.
	smi := t.TempDir()
	testenv.NvidiaSMI(t, smi, nil)
	sshd := testenv.StartSSHD(t, testenv.SSHDOptions{PathDirs: []string{smi}})
	remoteDir := t.TempDir()
	rm, rmodel := remote.RemoteFiles(mmproj, model)
	testenv.Copy(t, mmproj, filepath.Join(remoteDir, rm), 0o644)
	testenv.Copy(t, model, filepath.Join(remoteDir, rmodel), 0o644)
	testenv.Copy(t, relayBin, filepath.Join(remoteDir, "strata-vision-relay"), 0o755)
	testenv.Copy(t, encoderBin, filepath.Join(remoteDir, "strata-vision"), 0o755)

	c, out := startRun(t, r)
	ctx := context.Background()
	var since uint64
	follow(t, c, &since, events.ServerReady)

	// Paired and prepared (what `remote pair` and `remote prepare` record:
	// TestRemotePrepareCLIIntegration checks that prepare records the GPU so), with the
	// image tokens chosen small for speed.
	st := &settings.Settings{Vision: settings.PlacementGPU, LocalEncoder: localEncoder, CPUMaxTokens: 6, Remote: &settings.Remote{
		Host: sshd.Host, Port: sshd.Port, User: sshd.User,
		HostKey:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshd.HostSigner.PublicKey()))),
		KeyFile:   sshd.ClientKeyFile,
		RemoteDir: remoteDir,
		GPUs:      []settings.RemoteGPU{{Index: 0, Name: "NVIDIA GeForce RTX 3060 Laptop GPU", TotalMiB: 6144}},
		MaxTokens: 6,
	}}
	if err := st.Save(locations.SettingsFile()); err != nil {
		t.Fatal(err)
	}

	// GPU -> second PC: the config is edited once to name the relay, and
	// Strata restarts (its GPU encoder's VRAM is given back).
	res, err := c.SetVision(ctx, controlapi.VisionRequest{Placement: "remote"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Written || !res.Restarted {
		t.Fatalf("gpu -> remote must edit the config and restart: %+v", res)
	}
	follow(t, c, &since, events.ServerReady)
	snap, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	serverPID := snap.Server.PID
	if serverPID == 0 {
		t.Fatalf("no server pid in /v1/state: %+v", snap.Server)
	}
	cfgBytes, _ := os.ReadFile(r.Config)
	conf, err := strataconfig.Read(r.Config)
	if err != nil || !conf.NamesRelay() {
		t.Fatalf("the config does not name the relay (%v):\n%s", err, cfgBytes)
	}
	relayPID := relayOf(t, serverPID, relayExe)

	// Started exactly as Strata starts an encoder: [exe, --mmproj M, --model
	// X, ...], no --gpu (the config says gpu false: Strata must not count
	// the relay as a GPU encoder), the config's env added to the server's
	// environment, and no CUDA_VISIBLE_DEVICES (server.py sets none for
	// gpu false).
	argv := procStrings(t, relayPID, "cmdline")
	if len(argv) < 5 || argv[0] != relayExe || argv[1] != "--mmproj" || argv[3] != "--model" {
		t.Fatalf("the relay's command line %q", argv)
	}
	for _, a := range argv {
		if a == "--gpu" {
			t.Errorf("the relay was started with --gpu: %q", argv)
		}
	}
	env := map[string]string{}
	for _, kv := range procStrings(t, relayPID, "environ") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if got := env[strataconfig.EnvSettings]; got != locations.SettingsFile() {
		t.Errorf("the relay's %s = %q, want the service's settings %s", strataconfig.EnvSettings, got, locations.SettingsFile())
	}
	// The relay finds the control API as every client does: the state
	// folder of the service whose environment Strata inherited.
	if got := env[locations.EnvHome]; got != os.Getenv(locations.EnvHome) {
		t.Errorf("the relay's %s = %q, want the service's %q", locations.EnvHome, got, os.Getenv(locations.EnvHome))
	}
	if v, set := env["CUDA_VISIBLE_DEVICES"]; set {
		t.Errorf("the relay (gpu false) runs with CUDA_VISIBLE_DEVICES=%q; Strata sets none", v)
	}
	logAtRelayStart, _ := os.ReadFile(r.Log)

	n := 0
	// picture sends one picture and checks where it was read; it returns
	// when its reply arrived.
	picture := func(wantWhere string) (replied time.Time) {
		t.Helper()
		n++
		reply, code, msg := standinPicture(t, r.Port, n)
		d := time.Now()
		if wantWhere == "off" {
			if code != 400 || !strings.Contains(msg, "pictures are switched off") {
				t.Fatalf("picture %d with pictures off: %d %q %q", n, code, reply, msg)
			}
			// Its outcome event: where off, not OK.
			for _, e := range follow(t, c, &since, events.PictureEncoded) {
				if p := events.Get[events.PictureEncodedDetails](e); e.Kind == events.PictureEncoded && (!isFalse(p.OK) || p.Where != "off") {
					t.Fatalf("picture %d with pictures off: outcome %+v", n, e)
				}
			}
			return d
		}
		if code != 200 || !strings.HasPrefix(reply, "OK ") {
			t.Fatalf("picture %d (%s): %d %q %q\n%s", n, wantWhere, code, reply, msg, out.String())
		}
		var pic events.Event
		for _, e := range follow(t, c, &since, events.PictureEncoded) {
			if e.Kind == events.PictureEncoded && !isFalse(events.Get[events.PictureEncodedDetails](e).OK) {
				pic = e
			}
		}
		if w := events.Get[events.PictureEncodedDetails](pic).Where; w != wantWhere {
			t.Fatalf("picture %d was read %q, want %q (event %+v)", n, w, wantWhere, pic)
		}
		return d
	}
	switchTo := func(place string) (post, toPicture time.Duration) {
		t.Helper()
		t0 := time.Now()
		res, err := c.SetVision(ctx, controlapi.VisionRequest{Placement: place})
		post = time.Since(t0)
		if err != nil {
			t.Fatalf("POST /v1/vision %s: %v", place, err)
		}
		if res.Written || res.Restarted || res.RestartNeeded {
			t.Fatalf("%s: a switch among remote/cpu/off must not edit the config or restart Strata: %+v", place, res)
		}
		want := map[string]string{"remote": "remote", "cpu": "local_cpu", "off": "off"}[place]
		return post, picture(want).Sub(t0)
	}

	picture("remote")
	picture("remote") // the agent's encoder is warm
	// The second PC's GPU reads them: its encoder was started with --gpu,
	// and the state says so and names the GPU.
	var remoteArgs []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if exe, _ := os.Readlink(d + "/exe"); exe == filepath.Join(remoteDir, "strata-vision") {
			b, _ := os.ReadFile(d + "/cmdline")
			remoteArgs = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
	}
	if !slices.Contains(remoteArgs, "--gpu") {
		t.Errorf("the second PC's encoder runs as %q: without --gpu, pictures are read on its CPU", remoteArgs)
	}
	if snap, err := c.State(ctx); err != nil || snap.Vision.Device != "gpu" || snap.Vision.GPU != "NVIDIA GeForce RTX 3060 Laptop GPU" || snap.Vision.Degraded != "" {
		t.Errorf("/v1/state vision %+v (%v): want the second PC's GPU by name", snap.Vision, err)
	}
	times := map[string][2]time.Duration{}
	for _, place := range []string{"cpu", "off", "remote", "cpu", "remote"} {
		post, total := switchTo(place)
		if _, seen := times[place]; !seen {
			times[place] = [2]time.Duration{post, total}
		}
		t.Logf("SWITCH to %s: POST %v, POST to the next picture read there %v", place, post, total)
	}

	// Now while pictures keep coming: a sender posts one picture after
	// another (as clients do) while the placement changes under it. Strata
	// reads pictures one at a time and the relay reports them in order, so
	// the n-th picture read matches the n-th vision.picture event; each must
	// have been read where the settings said at some moment between its
	// request and its reply.
	type period struct {
		place      string
		from, till time.Time // from the POST's start to the end of the next POST
	}
	type sent struct {
		at, replied time.Time
		reply, err  string
		code        int
	}
	var (
		periods = []period{{place: "remote", from: time.Now()}}
		pics    []sent
		picsMu  sync.Mutex
		stop    = make(chan struct{})
		sender  sync.WaitGroup
	)
	markSince := since
	sender.Add(1)
	go func() {
		defer sender.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			picsMu.Lock()
			n++
			i := n
			picsMu.Unlock()
			at := time.Now()
			reply, code, msg := standinPicture(t, r.Port, i)
			picsMu.Lock()
			pics = append(pics, sent{at: at, replied: time.Now(), reply: reply, err: msg, code: code})
			picsMu.Unlock()
		}
	}()
	done := func() int { picsMu.Lock(); defer picsMu.Unlock(); return len(pics) }
	for _, place := range []string{"cpu", "off", "remote", "off", "cpu", "remote"} {
		t0 := time.Now()
		if _, err := c.SetVision(ctx, controlapi.VisionRequest{Placement: place}); err != nil {
			t.Fatalf("POST /v1/vision %s while pictures come: %v", place, err)
		}
		periods[len(periods)-1].till = time.Now()
		periods = append(periods, period{place: place, from: t0})
		for before, deadline := done(), time.Now().Add(60*time.Second); done() < before+3; {
			if time.Now().After(deadline) {
				close(stop)
				t.Fatalf("pictures stopped coming after the switch to %s", place)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(stop)
	sender.Wait()
	periods[len(periods)-1].till = time.Now()
	var read []sent
	for _, p := range pics {
		switch {
		case p.code == 200 && strings.HasPrefix(p.reply, "OK "):
			read = append(read, p)
		case p.code == 400 && strings.Contains(p.err, "pictures are switched off"):
		default:
			t.Fatalf("a picture while switching got %d %q %q", p.code, p.reply, p.err)
		}
	}
	var where []string
	for deadline := time.Now().Add(20 * time.Second); len(where) < len(read); {
		res, err := c.Events(ctx, since, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		since = res.Next
		for _, e := range res.Events {
			if p := events.Get[events.PictureEncodedDetails](e); e.Kind == events.PictureEncoded && e.Seq > markSince && !isFalse(p.OK) {
				where = append(where, p.Where)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pictures read but %d vision.picture events", len(read), len(where))
		}
	}
	placeOf := map[string]string{"remote": "remote", "local_cpu": "cpu"}
	allowed := func(place string, from, till time.Time) bool {
		for _, pe := range periods {
			if pe.place == place && !pe.from.After(till) && !pe.till.Before(from) {
				return true
			}
		}
		return false
	}
	counts := map[string]int{}
	for i, p := range pics {
		if p.code == 400 && !allowed("off", p.at, p.replied) {
			t.Errorf("picture %d was refused as off outside any off period", i)
		}
	}
	for i, p := range read {
		place := placeOf[where[i]]
		counts[place]++
		if !allowed(place, p.at, p.replied) {
			t.Errorf("a picture was read %q (%s) but the settings never said %s between its request and its reply", where[i], place, place)
		}
	}
	counts["off"] = len(pics) - len(read)
	t.Logf("while switching: %d pictures: %v", len(pics), counts)
	for _, place := range []string{"remote", "cpu", "off"} {
		if counts[place] == 0 {
			t.Errorf("no picture went %s while switching: %v", place, counts)
		}
	}

	// Nothing restarted: the same server, the same relay, no start event.
	snap, err = c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Server.PID != serverPID || snap.Server.Restarts != 0 {
		t.Errorf("the server changed: pid %d -> %d, restarts %d", serverPID, snap.Server.PID, snap.Server.Restarts)
	}
	if p := relayOf(t, serverPID, relayExe); p != relayPID {
		t.Errorf("the relay changed: pid %d -> %d", relayPID, p)
	}
	// The service's state carries what the relay reported (the tray reads it).
	if snap.Vision.LastWhere != "remote" || snap.Vision.Placement != "remote" || snap.Vision.LastPictureMS < 0 {
		t.Errorf("/v1/state vision %+v: want the last picture on the second PC", snap.Vision)
	}
	if snap.Remote == nil || snap.Remote.NEmbd != nEmbd || !snap.Remote.Reachable {
		t.Errorf("/v1/state remote %+v: want reachable, n_embd %d", snap.Remote, nEmbd)
	}
	if s, err := settings.Load(locations.SettingsFile()); err != nil || s.Remote.NEmbd != nEmbd {
		t.Errorf("the settings do not record n_embd %d: %v", nEmbd, err)
	}

	// The engine log: nothing from the relay since it started.
	logNow, _ := os.ReadFile(r.Log)
	for _, l := range strings.Split(strings.TrimPrefix(string(logNow), string(logAtRelayStart)), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "strata generate:") {
			t.Errorf("a line in the engine log after the relay started: %q", l)
		}
	}
	for _, l := range strings.Split(string(logNow), "\n") {
		if strings.Contains(l, "relay") || strings.HasPrefix(l, "strata-companion") {
			t.Errorf("a relay line in the engine log: %q", l)
		}
	}

	// The second PC's GPU gone (its driver finds none): the next agent's
	// encoder reads on its CPU, and the state says CPU, degraded, with why.
	testenv.SetGPUs(t, smi, nil)
	switchTo("cpu") // ends the agent session
	switchTo("remote")
	snap, err = c.State(ctx)
	if err != nil || snap.Vision.Device != "cpu" || snap.Vision.Encoder != controlapi.EncoderDegraded || !strings.Contains(snap.Vision.Degraded, "CUDA") {
		t.Errorf("/v1/state vision without the GPU: %+v (%v): want cpu, degraded, the reason", snap.Vision, err)
	}
	var status bytes.Buffer
	printServiceStatus(&status, &serviceStatus{Running: true, State: snap})
	if !strings.Contains(status.String(), "degraded") || !strings.Contains(status.String(), "its CPU") {
		t.Errorf("status without the GPU:\n%s", status.String())
	}
	t.Logf("status:\n%s", status.String())

	// Against a restart of the stand-in server (Strata's real start is 30-90 s).
	t0 := time.Now()
	if err := c.Server(ctx, "restart"); err != nil {
		t.Fatal(err)
	}
	follow(t, c, &since, events.ServerReady)
	restart := picture("remote").Sub(t0)
	t.Logf("RESTART of the stand-in server to the next picture read: %v (a real Strata start: 30-90 s)", restart)
	for place, d := range times {
		t.Logf("SUMMARY %s: switch %v vs stand-in restart %v (%.1fx)", place, d[1], restart, float64(restart)/float64(d[1]))
	}
	if snap, _ := c.State(ctx); snap != nil && snap.Server.PID == serverPID {
		t.Errorf("the restart kept pid %d: the check cannot tell a restart from a switch", serverPID)
	}

	// Stop: the relay ends with the server and leaves nothing on the second PC.
	if err := c.Server(ctx, "stop"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := 0
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			if exe, _ := os.Readlink(d + "/exe"); strings.HasPrefix(exe, remoteDir) || exe == relayExe {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d relay/agent processes still run after the server stopped", left)
		}
	}
}

// isFalse reads a *bool detail as the wire's false: nil (the key absent)
// is not false.
func isFalse(b *bool) bool { return b != nil && !*b }
