package controlserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/controlapi/ownertest"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/testenv"
)

const envFlood = "STRATA_TEST_FLOOD" // addr, token, count

// TestFloodHelper is the flooding account's side: it opens as many
// long-polls (GET /v1/events?wait=600) with the read token as it is told,
// all at once, and says how many the service let wait (no answer within
// 3 s), answered 429, or closed.
func TestFloodHelper(t *testing.T) {
	v := os.Getenv(envFlood)
	if v == "" {
		t.Skip("the flood helper, run by TestALongPollFloodLeavesTheOwnerAnswered")
	}
	f := strings.Split(v, ",")
	addr, tok := f[0], f[1]
	n, _ := strconv.Atoi(f[2])
	var waiting, refused, closed, failed atomic.Int64
	var wg sync.WaitGroup
	var conns sync.Map
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				failed.Add(1)
				return
			}
			conns.Store(i, c)
			fmt.Fprintf(c, "GET /v1/events?since=1&wait=600 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", tok)
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			switch {
			case err != nil && os.IsTimeout(err):
				waiting.Add(1)
			case strings.Contains(line, " 429 "):
				refused.Add(1)
			default:
				closed.Add(1)
			}
		}(i)
	}
	wg.Wait()
	fmt.Printf("FLOOD waiting=%d refused=%d closed=%d failed=%d\n", waiting.Load(), refused.Load(), closed.Load(), failed.Load())
	// Hold them until told to go (stdin closes).
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// Issue 32, Medium: ~20,000 GET /v1/events?wait=600 with the world-readable
// read token exhausted the service's descriptors and took its memory from
// 16 to 484 MB; the owner's `status` failed. Now another account's 3,000
// long-polls get at most WaitsPerCaller waits and a bounded number of
// connections; the operator (and root, and the owner) are answered at once
// meanwhile, and the service's heap stays bounded.
func TestALongPollFloodLeavesTheOwnerAnswered(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the flood comes from another account")
	}
	bus := events.NewBus(10)
	bus.Publish(events.Event{Kind: events.ServerReady, Message: "ready"})
	s, addr := serveWith(t, Backend{Bus: bus, Owner: ownertest.Funcs{StateF: func(context.Context) (*controlapi.State, error) { return &controlapi.State{Seq: 7}, nil }}}, DefaultTimeouts)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	fdBefore := openFDs(t)

	self, _ := os.Executable()
	bin := t.TempDir() + "/controlserver.test"
	if b, err := os.ReadFile(self); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatal(err)
	}
	testenv.OpenPath(t, bin)
	const n = 3000
	cmd := exec.Command(bin, "-test.run=^TestFloodHelper$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%d", envFlood, addr, s.ReadToken(), n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdin, _ := cmd.StdinPipe()
	out := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(120 * time.Second); !strings.Contains(out.String(), "FLOOD "); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood did not get under way:\n%s", out.String())
		}
	}

	// During the flood: the operator and root are answered at once.
	c := &controlapi.Client{BaseURL: "http://" + addr, Token: s.Token()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if st, err := c.State(ctx); err != nil || st.Seq != 7 {
		t.Fatalf("the operator's state during the flood: %v", err)
	}
	if r, err := c.Events(ctx, 0, time.Second); err != nil || len(r.Events) == 0 {
		t.Fatalf("the operator's events during the flood: %v", err)
	}
	rd := *c
	rd.Token = s.ReadToken()
	if _, err := rd.State(ctx); err != nil {
		t.Fatalf("root with the read token during the flood: %v", err)
	}

	line := out.String()[strings.Index(out.String(), "FLOOD "):]
	line = line[:strings.Index(line, "\n")]
	var waiting, refused, closed, failed int
	fmt.Sscanf(line, "FLOOD waiting=%d refused=%d closed=%d failed=%d", &waiting, &refused, &closed, &failed)
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	fdDuring := openFDs(t)
	t.Logf("3,000 long-polls by nobody: %s; the service's heap %d -> %d KiB, its descriptors %d -> %d",
		line, before.HeapInuse>>10, during.HeapInuse>>10, fdBefore, fdDuring)
	if waiting > 16 {
		t.Errorf("%d of nobody's long-polls wait, want at most %d", waiting, DefaultLimits.WaitsPerCaller)
	}
	if fdDuring-fdBefore > 128+16 {
		t.Errorf("the flood holds %d of the service's descriptors, want at most about %d", fdDuring-fdBefore, DefaultLimits.ConnsPerCaller)
	}
	if during.HeapInuse > before.HeapInuse+64<<20 {
		t.Errorf("the service's heap grew from %d to %d KiB", before.HeapInuse>>10, during.HeapInuse>>10)
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *lockedBuf) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }
