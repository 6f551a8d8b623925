// Command gpu checks, on a machine with an NVIDIA GPU, that the agent's GPU
// observation is true: it drives `strata-vision-relay agent` over pipes
// with an encoder stand-in (encoder.py) that really holds ~1.4 GB of VRAM,
// and compares what the agent reports with nvidia-smi's own reading, then
// checks that the idle stop gives the VRAM back and that the wake takes it
// again. See README.md. Without a GPU it says so and exits 2; without a
// way to allocate VRAM from Python (libcuda or torch), 3.
//
//	go run ./bench/gpu [-card N] [-idle S] [-mib M]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/nvsmi"
)

func main() { os.Exit(run()) }

var failed bool

func check(ok bool, format string, a ...any) {
	mark := "ok  "
	if !ok {
		mark, failed = "FAIL", true
	}
	fmt.Printf("%s %s\n", mark, fmt.Sprintf(format, a...))
}

func run() int {
	card := flag.Int("card", -1, "the agent's --cuda-device (-1: none chosen; the agent uses card 0 in PCI order)")
	idle := flag.Int("idle", 3, "the agent's --idle-stop, seconds")
	mib := flag.Int("mib", 1383, "VRAM the encoder stand-in holds, MiB")
	flag.Parse()

	// 1. A GPU, read as the agent reads it.
	cands := nvsmi.Candidates("", nil, nil)
	if len(cands) == 0 {
		fmt.Printf("no GPU here: nvidia-smi was not found (looked on PATH and in %s); run this on a PC with an NVIDIA GPU and its driver\n", strings.Join(nvsmi.DefaultPaths(), ", "))
		return 2
	}
	smi := cands[0]
	before := query(smi)
	if before.Err != nil {
		_, what, fix := before.Err.Explain()
		fmt.Printf("no GPU here: %s (%s)\n", what, fix)
		return 2
	}
	idx := max(*card, 0)
	g, ok := find(before.GPUs, idx)
	if !ok {
		fmt.Printf("no GPU %d here: nvidia-smi lists %d card(s)\n", idx, len(before.GPUs))
		return 2
	}
	fmt.Printf("nvidia-smi %s: card %d is %s, %d MiB used of %d, MIG %q\n", smi, idx, g.Name, g.UsedMiB, g.TotalMiB, g.MIG)

	// 2. A way to hold VRAM from Python.
	here, _ := os.Getwd()
	script := filepath.Join(here, "bench", "gpu", "encoder.py")
	py := "python3"
	if runtime.GOOS == "windows" {
		py = "python"
	}
	out, err := exec.Command(py, script, "--check").CombinedOutput()
	fmt.Print(string(out))
	if err != nil {
		fmt.Printf("cannot hold VRAM from Python here (%v): install the NVIDIA driver's libcuda or torch\n", err)
		return 3
	}

	// 3. The agent, built from this tree, and the encoder wrapper.
	tmp, err := os.MkdirTemp("", "gpubench-")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(tmp)
	relay := filepath.Join(tmp, "strata-vision-relay")
	enc := filepath.Join(tmp, "strata-vision")
	wrapper := fmt.Sprintf("#!/bin/sh\nGPU_BENCH_MIB=%d exec %s %q \"$@\"\n", *mib, py, script)
	if runtime.GOOS == "windows" {
		relay += ".exe"
		enc += ".cmd"
		wrapper = fmt.Sprintf("@set GPU_BENCH_MIB=%d\r\n@%s \"%s\" %%*\r\n", *mib, py, script)
	}
	if out, err := exec.Command("go", "build", "-o", relay, "./relay").CombinedOutput(); err != nil {
		fmt.Printf("building the relay: %v\n%s", err, out)
		return 1
	}
	mm := filepath.Join(tmp, "mmproj.gguf")
	if os.WriteFile(enc, []byte(wrapper), 0o755) != nil || os.WriteFile(mm, nil, 0o644) != nil {
		fmt.Println("cannot write into", tmp)
		return 1
	}
	args := []string{"agent", "--encoder", enc, "--mmproj", mm, "--model", mm, "--gpu", "--idle-stop", strconv.Itoa(*idle), "--scratch", tmp}
	if *card >= 0 {
		args = append(args, "--cuda-device", strconv.Itoa(*card))
	}
	cmd := exec.Command(relay, args...)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	s := &session{w: framing.NewWriter(stdin), r: framing.NewReader(stdout)}
	if typ, p := s.next(); typ != framing.Hello {
		fmt.Printf("the agent's first frame was %q %s\n", typ, p)
		return 1
	}

	// 4. A picture starts the encoder: the agent's figure against nvidia-smi's.
	base := used(smi, idx)
	w, pid := s.picture(1)
	compare("start", smi, idx, base, w, pid, *mib)

	// 5. The idle stop gives it back.
	t0 := time.Now()
	for {
		ev, ok := s.event(time.Duration(*idle+30) * time.Second)
		if !ok {
			check(false, "no idle stop within %d s", *idle+30)
			break
		}
		if ev.Kind == "idle_stopped" {
			fmt.Printf("idle stop after %.1f s\n", time.Since(t0).Seconds())
			break
		}
	}
	var after int
	deadline := time.Now().Add(20 * time.Second)
	for after = used(smi, idx); after > base+64 && time.Now().Before(deadline); after = used(smi, idx) {
		time.Sleep(200 * time.Millisecond) // the driver frees it a moment after the process ends
	}
	check(after <= base+64, "after the idle stop card %d uses %d MiB (before the start: %d): the VRAM was given back", idx, after, base)
	check(!hasApp(smi, pid), "the encoder (pid %d) no longer holds VRAM in nvidia-smi --query-compute-apps", pid)

	// 6. The wake takes it again.
	w, pid = s.picture(2)
	compare("wake", smi, idx, after, w, pid, *mib)
	if failed {
		fmt.Println("FAILED")
		return 1
	}
	fmt.Println("PASSED")
	return 0
}

func query(smi string) nvsmi.Result {
	return nvsmi.Query(context.Background(), nvsmi.Local(smi, 10*time.Second), smi, true)
}

func find(gs []nvsmi.GPU, idx int) (nvsmi.GPU, bool) {
	for _, g := range gs {
		if g.Index == idx {
			return g, true
		}
	}
	return nvsmi.GPU{}, false
}

func used(smi string, idx int) int {
	g, _ := find(query(smi).GPUs, idx)
	return g.UsedMiB
}

// apps is nvidia-smi's own per-process reading: pid -> used MiB ("[N/A]"
// under Windows' WDDM: -1).
func apps(smi string) map[int]int {
	out, _ := exec.Command(smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits").Output()
	m := map[int]int{}
	for _, l := range strings.Split(string(out), "\n") {
		p, u, ok := strings.Cut(l, ",")
		pid, err := strconv.Atoi(strings.TrimSpace(p))
		if !ok || err != nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(u))
		if err != nil {
			v = -1
		}
		m[pid] = v
	}
	return m
}

func hasApp(smi string, pid int) bool { _, ok := apps(smi)[pid]; return ok }

// compare checks the agent's report of a start against nvidia-smi: the
// card, the card's used memory then and before, and the process's own use.
func compare(what, smi string, idx, base int, w *framing.Where, pid, mib int) {
	if w == nil {
		check(false, "%s: the agent reported no place", what)
		return
	}
	v, known := w.VRAM()
	now := used(smi, idx)
	proc, listed := apps(smi)[pid]
	fmt.Printf("%s: agent says card %d (%s), %d MiB (known %v); nvidia-smi: card used %d -> %d MiB (+%d), encoder pid %d uses %d MiB (listed %v); asked for %d MiB\n",
		what, w.GPUIndex, w.GPU, v, known, base, now, now-base, pid, proc, listed, mib)
	check(w.Device == "gpu" && w.GPUIndex == idx, "%s: the agent names card %d, the one the encoder runs on", what, idx)
	check(known && v >= mib, "%s: the agent's figure %d MiB is known and covers the %d MiB allocated (plus the CUDA context)", what, v, mib)
	check(abs(v-(now-base)) <= 64, "%s: the agent's figure is within 64 MiB of nvidia-smi's card reading (+%d)", what, now-base)
	if listed && proc >= 0 {
		check(abs(v-proc) <= 64, "%s: the agent's figure is within 64 MiB of nvidia-smi's figure for the encoder process (%d)", what, proc)
	} else {
		fmt.Printf("     %s: nvidia-smi gives no per-process figure here (Windows WDDM, or not listed); compared with the card only\n", what)
	}
}

func abs(v int) int { return max(v, -v) }

type session struct {
	w *framing.Writer
	r *framing.Reader
}

func (s *session) next() (framing.Type, []byte) {
	for {
		typ, p, err := s.r.Next()
		if err != nil {
			if err == io.EOF {
				fmt.Println("the agent ended")
			}
			return 0, nil
		}
		if typ != framing.Beat {
			return typ, p
		}
	}
}

// event waits for the agent's next event (skipping other frames).
func (s *session) event(within time.Duration) (framing.AgentEvent, bool) {
	got := make(chan framing.AgentEvent, 1)
	go func() {
		for {
			typ, p := s.next()
			if typ == 0 {
				close(got)
				return
			}
			var e framing.AgentEvent
			if typ == framing.Event && json.Unmarshal(p, &e) == nil {
				got <- e
				return
			}
		}
	}()
	select {
	case e, ok := <-got:
		return e, ok
	case <-time.After(within):
		return framing.AgentEvent{}, false
	}
}

// picture sends one picture and returns where the encoder it started
// reads (the started/woke event) and the encoder's pid (a status).
func (s *session) picture(id uint32) (*framing.Where, int) {
	s.w.Write(framing.Encode, framing.PutID(id), []byte("\x89PNG\r\n\x1a\nbench"))
	var w *framing.Where
	for {
		typ, p := s.next()
		switch typ {
		case framing.Event:
			var e framing.AgentEvent
			if json.Unmarshal(p, &e) == nil && e.Where != nil {
				w = e.Where
			}
			continue
		case framing.Result:
		case framing.Error:
			fmt.Printf("the agent answered the picture with an error: %q\n", p)
		default:
			fmt.Printf("unexpected frame %q\n", typ)
		}
		break
	}
	s.w.Write(framing.AskStatus)
	for {
		typ, p := s.next()
		if typ == 0 {
			return w, 0
		}
		var st framing.StatusInfo
		if typ == framing.StatusReply && json.Unmarshal(p, &st) == nil {
			return w, st.PID
		}
	}
}
