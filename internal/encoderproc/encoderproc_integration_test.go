package encoderproc

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/testenv"
)

func TestWhereFromTheStartLine(t *testing.T) {
	const noGPU = "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected"
	for _, c := range []struct {
		start, cuda string
		gpu         bool
		want        framing.Where
	}{
		{"strata-vision: warmed up at 1024 image tokens", "", true, framing.Where{Device: "gpu", Expected: "gpu", Tokens: 1024}},
		{"strata-vision: warmed up at 1024 image tokens", noGPU, true, framing.Where{Device: "cpu", Expected: "gpu", Tokens: 1024, Reason: noGPU}},
		{"strata-vision: on the CPU, 8 threads, no warm-up", "", false, framing.Where{Device: "cpu", Threads: 8}},
		{"strata-vision: on the CPU, 8 threads, no warm-up", "", true, framing.Where{Device: "cpu", Expected: "gpu", Threads: 8,
			Reason: "the encoder started on the CPU although --gpu was passed"}},
		{"", "", true, framing.Where{Device: "gpu", Expected: "gpu"}}, // another encoder: it said nothing
		{"", "", false, framing.Where{Device: "cpu"}},
	} {
		if got := observe(c.start, c.cuda, c.gpu); got != c.want {
			t.Errorf("observe(%q, %q, %v) = %+v, want %+v", c.start, c.cuda, c.gpu, got, c.want)
		}
	}
}

// syncBuffer is the encoder's stderr, written on its own goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An encoder older than the server refuses a newer argument: it runs
// without it (and says so), READY and its start line are read, and once
// stopped it answers no request.
func TestStartDropsARefusedArgument(t *testing.T) {
	dir := t.TempDir()
	bin := testenv.Program(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin", testenv.BuildOptions{Dir: dir})
	mm, model := filepath.Join(dir, "mmproj.gguf"), filepath.Join(dir, "vocab.gguf")
	if err := fakeencoder.WriteMmproj(mm, 16); err != nil {
		t.Fatal(err)
	}
	if err := fakeencoder.WriteModel(model, 5); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	e, err := Start(bin, []string{"--mmproj", mm, "--model", model, "--min-tokens", "4", "--threads", "2"}, nil, &stderr, time.Minute)
	if err != nil {
		t.Fatalf("Start: %v (stderr %q)", err, stderr.String())
	}
	t.Cleanup(func() { e.Stop(0) })
	if want := []string{"--mmproj", mm, "--model", model, "--threads", "2"}; !slices.Equal(e.Args(), want) {
		t.Errorf("Args = %q, want %q", e.Args(), want)
	}
	if !strings.Contains(stderr.String(), "does not take --min-tokens") {
		t.Errorf("no note of the dropped argument on stderr: %q", stderr.String())
	}
	if e.NEmbd() != 16 || !e.Alive() || e.PID() <= 0 {
		t.Errorf("NEmbd %d, Alive %v, PID %d", e.NEmbd(), e.Alive(), e.PID())
	}
	if w := e.Where(false); w.Device != "cpu" || w.Threads != 2 {
		t.Errorf("Where = %+v, want the CPU with 2 threads", w)
	}
	e.Stop(5 * time.Second)
	if e.Alive() {
		t.Error("alive after Stop")
	}
	if _, err := e.Request("ENC x y", time.Second, nil); !errors.Is(err, ErrStopped) {
		t.Errorf("Request after Stop: %v, want ErrStopped", err)
	}
}
