package fakestrata

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/testenv"
)

// start runs the stand-in as the supervisor would and returns its stdout lines.
func start(t *testing.T, r *Root) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(r.Python, "serve/server.py", "--engine", "strata", "--config", r.Config, "--port", strconv.Itoa(r.Port))
	cmd.Dir = r.Dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, lines
}

func waitLine(t *testing.T, lines <-chan string, prefix string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before a line starting %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("no line starting %q", prefix)
		}
	}
}

func get(t *testing.T, url, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestStartsLikeStrata(t *testing.T) {
	t.Parallel()
	r := NewRoot(t, RootOptions{APIKey: "k1"})
	cmd, lines := start(t, r)
	ready := waitLine(t, lines, "ready: ")
	want := "ready: http://127.0.0.1:" + strconv.Itoa(r.Port) + "/v1  ("
	if !strings.HasPrefix(ready, want) || !strings.Contains(ready, "API key required") {
		t.Fatalf("ready line %q", ready)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(r.Port)
	code, h := get(t, base+"/health", "")
	if code != 200 || h["service"] != "strata" || h["api_key"] != true || h["images"] != false {
		t.Fatalf("/health = %d %v", code, h)
	}
	if code, _ := get(t, base+"/v1/status", ""); code != 401 {
		t.Fatalf("/v1/status without the key = %d", code)
	}
	if code, st := get(t, base+"/v1/status", "k1"); code != 200 || st["vision"] == nil {
		t.Fatalf("/v1/status = %d %v", code, st)
	}
	// The engine child reported its cache in the engine log.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(r.Log)
		if strings.Contains(string(b), "strata generate: expert cache") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine log %s: %q", r.Log, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := NewRoot(t, RootOptions{Port: l.Addr().(*net.TCPAddr).Port})
	cmd, lines := start(t, r)
	l1 := waitLine(t, lines, "[strata] error: port")
	if !strings.Contains(l1, "already in use") {
		t.Fatalf("line %q", l1)
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v", err)
	}
}

func TestVisionEncoderReadyChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enc := filepath.Join(dir, "enc.sh")
	testenv.WriteExecutable(enc, []byte("#!/bin/sh\necho 'strata-vision: on the CPU, 4 threads, no warm-up' >&2\necho READY 2560\n"+
		"while read cmd a b; do [ \"$cmd\" = QUIT ] && exit 0; printf 'SVE1' > \"$b\"; echo OK 4 1 1 5; done\n"))
	bad := filepath.Join(dir, "bad.sh")
	testenv.WriteExecutable(bad, []byte("#!/bin/sh\necho 'error: cannot open mmproj'\n"))

	vision := func(exe string) map[string]any {
		return map[string]any{"vision": map[string]any{"exe": exe, "mmproj": "mm.gguf", "model": "stub.gguf", "gpu": false, "threads": 4}}
	}
	r := NewRoot(t, RootOptions{Extra: vision(enc)})
	_, lines := start(t, r)
	waitLine(t, lines, "[strata] starting the vision encoder")
	if l := waitLine(t, lines, "ready: "); !strings.Contains(l, "images on") {
		t.Fatalf("ready %q", l)
	}
	resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(r.Port)+"/standin/encode", "image/png", strings.NewReader("png"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "OK 4 1 1 5") {
		t.Fatalf("encode: %d %s", resp.StatusCode, b)
	}
	logb, _ := os.ReadFile(r.Log)
	if !strings.Contains(string(logb), "strata-vision: on the CPU") {
		t.Fatalf("the encoder's stderr is not in the engine log: %q", logb)
	}

	r2 := NewRoot(t, RootOptions{Extra: vision(bad)})
	cmd2, lines2 := start(t, r2)
	if l := waitLine(t, lines2, "the vision encoder did not start: "); !strings.Contains(l, "cannot open mmproj") {
		t.Fatalf("line %q", l)
	}
	if err := cmd2.Wait(); err == nil {
		t.Fatal("the server kept running without its encoder")
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	m, err := ParseMode("crash-after=2s, ignore-term\nhang")
	if err != nil || !m.Crash || m.CrashAfter != 2*time.Second || !m.IgnoreTerm || !m.Hang {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := ParseMode("explode"); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
	r := NewRoot(t, RootOptions{Mode: "crash-after=10ms"})
	cmd, lines := start(t, r)
	waitLine(t, lines, "ready: ")
	waitLine(t, lines, "RuntimeError: stand-in crash")
	if err := cmd.Wait(); err == nil {
		t.Fatal("crash mode exited 0")
	}
}

// The stand-in's temp folders (Strata's strata-vision-*) go under the root's
// own tmp, so a test's root takes them away with it; nothing lands in /tmp.
func TestTempFoldersStayInTheRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	paths := filepath.Join(dir, "paths")
	enc := filepath.Join(dir, "enc.sh")
	testenv.WriteExecutable(enc, []byte("#!/bin/sh\necho READY 2560\n"+
		"while read cmd a b; do [ \"$cmd\" = QUIT ] && exit 0; echo \"$a\" >> "+paths+"; printf 'SVE1' > \"$b\"; echo OK 4 1 1 5; done\n"))
	r := NewRoot(t, RootOptions{Extra: map[string]any{"vision": map[string]any{"exe": enc, "mmproj": "mm.gguf", "model": "stub.gguf"}}})
	_, lines := start(t, r)
	waitLine(t, lines, "ready: ")
	resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(r.Port)+"/standin/encode", "image/png", strings.NewReader("png"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	b, err := os.ReadFile(paths)
	if err != nil {
		t.Fatalf("the encoder got no request: %v", err)
	}
	got := strings.TrimSpace(string(b))
	if want := filepath.Join(r.Dir, "tmp", "strata-vision-"); !strings.HasPrefix(got, want) {
		t.Errorf("the picture went to %s, want a folder under %s (the root's TMPDIR)", got, want)
	}
}

// Build keeps the program in memory and removes its build folder at once.
func TestBuildLeavesNoFolderBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	buildOnce = sync.Once{}
	bin := Build(t)
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("Build gave %s: %v", bin, err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("Build left %s in TMPDIR (%s)", ents[0].Name(), tmp)
	}
}

func TestExpertCacheFollowsTheGPUAndThePlacement(t *testing.T) {
	t.Parallel()
	ref := &GPU{Name: refGPUName, TotalMiB: refGPUTotalMiB}
	for _, c := range []struct {
		gpu     *GPU
		onGPU   bool
		experts int
		gib     float64
	}{
		{ref, true, 3112, 5.96},  // the reference machine, encoder on its GPU
		{ref, false, 3641, 6.96}, // the encoder on the CPU or a second PC
		{&GPU{"NVIDIA GeForce RTX 4070", 12282}, false, 1587, 3.03},
		{&GPU{"NVIDIA GeForce RTX 3060", 6144}, false, 0, 0}, // too small: no cache
		{nil, false, 0, 0}, // no GPU
	} {
		n, gib := ExpertCache(c.gpu, c.onGPU)
		if n != c.experts || gib != c.gib {
			t.Errorf("%+v encoder on GPU %v: %d experts, %.2f GiB, want %d, %.2f", c.gpu, c.onGPU, n, gib, c.experts, c.gib)
		}
	}
	if g, ok, err := ParseGPU("NVIDIA GeForce RTX 4070:12282"); err != nil || !ok || g.Name != "NVIDIA GeForce RTX 4070" || g.TotalMiB != 12282 {
		t.Errorf("ParseGPU: %+v %v %v", g, ok, err)
	}
	if g, ok, err := ParseGPU("none"); err != nil || !ok || g != nil {
		t.Errorf("ParseGPU(none): %+v %v %v", g, ok, err)
	}
	if _, _, err := ParseGPU("RTX"); err == nil {
		t.Error("ParseGPU accepted a GPU without its VRAM")
	}
}

// On a PC without a CUDA GPU the stand-in reports what a real Strata has
// there: no expert cache in VRAM, in its output, its engine log and /v1/status.
func TestNoGPUNoExpertCache(t *testing.T) {
	t.Parallel()
	r := NewRoot(t, RootOptions{Env: []string{EnvGPU + "=none"}})
	cmd, lines := start(t, r)
	var out []string
	for l := range lines {
		out = append(out, l)
		if strings.HasPrefix(l, "ready: ") {
			break
		}
	}
	all := strings.Join(out, "\n")
	if strings.Contains(all, "expert cache (") || !strings.Contains(all, "no CUDA GPU") {
		t.Errorf("startup lines on a PC without a GPU:\n%s", all)
	}
	_, st := get(t, "http://127.0.0.1:"+strconv.Itoa(r.Port)+"/v1/status", "")
	vram, _ := st["vram"].(map[string]any)
	machine, _ := st["machine"].(map[string]any)
	if vram["experts"] != 0.0 || len(machine["gpu"].([]any)) != 0 {
		t.Errorf("/v1/status on a PC without a GPU: %v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(r.Log)
		if strings.Contains(string(b), "no expert cache in VRAM") {
			break
		}
		if strings.Contains(string(b), "expert cache ") || time.Now().After(deadline) {
			t.Fatalf("engine log %s: %q", r.Log, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

// The stand-in starts the config's vision.exe as Strata's server does (shared
// docs/strata.md, "The encoder process"): [exe, --mmproj M, --model X, --threads N,
// --max-tokens N] with relative paths resolved against the config's cwd, the
// server's working directory inherited, the config's env added and no
// CUDA_VISIBLE_DEVICES for a CPU encoder (server.py @5f8f3f2 sets none for
// `gpu: false`: the encoder hides the GPUs itself), stderr appended to the
// config's log; each
// picture is `ENC <tmp>/strata-vision-XXXX/<sha256[:32]>.img <same>.sve`;
// an encoder that exits during a picture gives "the vision encoder stopped"
// and is started again on the next picture.
func TestStartsTheEncoderLikeStrata(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "encoder-record")
	enc := filepath.Join(dir, "enc.sh")
	// Each start records its argv, cwd and env; the first ENC of the first
	// start exits (a crash), later ones answer OK with a .sve.
	script := `#!/bin/sh
echo "start $* cwd=$(pwd) cuda=$CUDA_VISIBLE_DEVICES extra=$MY_WRAPPER_SETTING" >> ` + rec + `
echo "strata-vision: on the CPU, 2 threads, no warm-up" >&2
echo READY 64
while read cmd img out; do
  [ "$cmd" = QUIT ] && exit 0
  echo "enc $img $out" >> ` + rec + `
  if [ ! -e ` + rec + `.crashed ]; then : > ` + rec + `.crashed; exit 1; fi
  printf 'SVE1' > "$out"; echo "OK 6 2 3 1"
done
`
	testenv.WriteExecutable(enc, []byte(script))
	r := NewRoot(t, RootOptions{Extra: map[string]any{
		"cwd":    dir,
		"env":    map[string]string{"MY_WRAPPER_SETTING": "from-config"},
		"vision": map[string]any{"exe": enc, "mmproj": "mm.gguf", "model": "sub/model.gguf", "gpu": false, "threads": 2, "max_tokens": 300},
	}})
	cmd, lines := start(t, r)
	waitLine(t, lines, "ready:")
	post := func() (int, map[string]any) {
		resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(r.Port)+"/standin/encode", "image/png", strings.NewReader("\x89PNG picture"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := post(); code != 400 || !strings.Contains(m["error"].(string), "the vision encoder stopped") {
		t.Fatalf("a picture the encoder died on: %d %v", code, m)
	}
	if code, m := post(); code != 200 || !strings.HasPrefix(m["reply"].(string), "OK 6 ") {
		t.Fatalf("the next picture (the encoder started again): %d %v", code, m)
	}
	// Re-sent: answered from Strata's result cache, not encoded again (the
	// record below has one ENC per encode).
	if code, m := post(); code != 200 || !strings.HasPrefix(m["reply"].(string), "OK 6 ") {
		t.Fatalf("the same picture again: %d %v", code, m)
	}
	b, _ := os.ReadFile(rec)
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	wantStart := "start --mmproj " + filepath.Join(dir, "mm.gguf") + " --model " + filepath.Join(dir, "sub/model.gguf") +
		" --threads 2 --max-tokens 300 cwd=" + r.Dir + " cuda= extra=from-config"
	if len(got) != 4 || got[0] != wantStart || got[2] != wantStart {
		t.Fatalf("encoder record:\n%s\nwant starts %q", b, wantStart)
	}
	for _, l := range []string{got[1], got[3]} {
		f := strings.Fields(l)
		if len(f) != 3 || !strings.HasSuffix(f[1], ".img") || strings.TrimSuffix(f[1], ".img")+".sve" != f[2] ||
			!strings.HasPrefix(filepath.Base(filepath.Dir(f[1])), "strata-vision-") || len(strings.TrimSuffix(filepath.Base(f[1]), ".img")) != 32 {
			t.Errorf("request line %q is not ENC <tmp>/strata-vision-XXXX/<sha256[:32]>.img <same>.sve", l)
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, filepath.Base(r.Log))) // the config's relative `log`, against its cwd
	if n := strings.Count(string(log), "strata-vision: on the CPU, 2 threads, no warm-up"); n != 2 {
		t.Errorf("the encoder's stderr appears %d times in the engine log, want 2 (one per start):\n%s", n, log)
	}
	// Stopped as a service stops it: QUIT to the encoder, which ends.
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("the stand-in's exit after SIGTERM: %v", err)
	}
}

// TestEncoderCommandAsServerPy: the encoder's command line and environment
// for the vision blocks a config may hold, as serve/server.py builds them
// (main(): relative exe/mmproj/model against the config's cwd; Vision: --gpu
// when truthy, --threads and --max-tokens when truthy; child_env and
// vision_env: CUDA_VISIBLE_DEVICES from the config's gpu, then the vision
// block's cuda_device; newer servers: --min-tokens).
func TestEncoderCommandAsServerPy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the stand-in server per case")
	}
	for _, c := range []struct {
		name   string
		extra  map[string]any
		vision map[string]any
		want   string // argv after the exe, then cuda=<CUDA_VISIBLE_DEVICES>
	}{
		{"gpu true, bare exe name against cwd", nil,
			map[string]any{"exe": "enc.sh", "mmproj": "/abs/mm.gguf", "model": "m.gguf", "gpu": true, "max_tokens": 1024, "threads": 0},
			"--mmproj /abs/mm.gguf --model CWD/m.gguf --gpu --max-tokens 1024 cuda= order="},
		{"gpu false: no --gpu and no CUDA_VISIBLE_DEVICES", nil,
			map[string]any{"exe": "enc.sh", "mmproj": "mm.gguf", "model": "m.gguf", "gpu": false, "threads": 8, "max_tokens": 300},
			"--mmproj CWD/mm.gguf --model CWD/m.gguf --threads 8 --max-tokens 300 cuda= order="},
		{"a truthy string and the config's GPU", map[string]any{"gpu": 1},
			map[string]any{"exe": "enc.sh", "mmproj": "mm.gguf", "model": "m.gguf", "gpu": "false", "max_tokens": 0},
			"--mmproj CWD/mm.gguf --model CWD/m.gguf --gpu cuda=1 order=PCI_BUS_ID"},
		{"cuda_device wins, min_tokens passed on", map[string]any{"gpu": []any{0, 2}},
			map[string]any{"exe": "enc.sh", "mmproj": "mm.gguf", "model": "m.gguf", "gpu": true, "cuda_device": 1, "min_tokens": 64},
			"--mmproj CWD/mm.gguf --model CWD/m.gguf --gpu --min-tokens 64 cuda=1 order=PCI_BUS_ID"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := filepath.Join(dir, "record")
			testenv.WriteExecutable(filepath.Join(dir, "enc.sh"), []byte(`#!/bin/sh
echo "$* cuda=$CUDA_VISIBLE_DEVICES order=$CUDA_DEVICE_ORDER" > `+rec+`
echo READY 8
while read cmd rest; do [ "$cmd" = QUIT ] && exit 0; done
`))
			extra := map[string]any{"cwd": dir, "vision": c.vision}
			for k, v := range c.extra {
				extra[k] = v
			}
			r := NewRoot(t, RootOptions{Extra: extra})
			cmd, lines := start(t, r)
			waitLine(t, lines, "ready:")
			b, _ := os.ReadFile(rec)
			if got, want := strings.TrimSpace(string(b)), strings.ReplaceAll(c.want, "CWD", dir); got != want {
				t.Errorf("encoder started as\n  %s\nwant\n  %s", got, want)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
	}
}
