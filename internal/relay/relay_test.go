package relay

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/relay/remote"
)

func TestSplitENC(t *testing.T) {
	for _, c := range []struct{ in, img, out string }{
		{"/tmp/strata-vision-ab/0123.img /tmp/strata-vision-ab/0123.sve", "/tmp/strata-vision-ab/0123.img", "/tmp/strata-vision-ab/0123.sve"},
		{`C:\Users\Ana Lu\AppData\Local\Temp\strata-vision-x\ff.img C:\Users\Ana Lu\AppData\Local\Temp\strata-vision-x\ff.sve`,
			`C:\Users\Ana Lu\AppData\Local\Temp\strata-vision-x\ff.img`, `C:\Users\Ana Lu\AppData\Local\Temp\strata-vision-x\ff.sve`},
		{"a.png b.out", "a.png", "b.out"},
	} {
		img, out, ok := splitENC(c.in)
		if !ok || img != c.img || out != c.out {
			t.Errorf("splitENC(%q) = %q %q %v", c.in, img, out, ok)
		}
	}
	if _, _, ok := splitENC("one"); ok {
		t.Error("one path accepted")
	}
}

func TestAgentCommandQuoting(t *testing.T) {
	a := remote.AgentArgs{OS: "linux", RemoteDir: "/home/ana/strata vision", Encoder: "strata-vision", Mmproj: "mmproj-BF16.gguf", Model: "m.vocab.gguf", GPU: true, MaxTokens: 1024, IdleStopS: 300}
	want := "'/home/ana/strata vision/strata-vision-relay' agent --encoder '/home/ana/strata vision/strata-vision' --mmproj '/home/ana/strata vision/mmproj-BF16.gguf' --model '/home/ana/strata vision/m.vocab.gguf' --gpu --max-tokens 1024 --idle-stop 300"
	if got, err := a.Command(); err != nil || got != want {
		t.Errorf("linux command:\n got %s\nwant %s", got, want)
	}
	w := remote.AgentArgs{OS: "windows", RemoteDir: `C:\Strata Vision`, Encoder: `D:\strata\engine\strata-vision.exe`, Mmproj: "mm.gguf", Model: "m.vocab.gguf"}
	want = `"C:\Strata Vision\strata-vision-relay.exe" agent --encoder D:\strata\engine\strata-vision.exe --mmproj "C:\Strata Vision\mm.gguf" --model "C:\Strata Vision\m.vocab.gguf"`
	if got, err := w.Command(); err != nil || got != want {
		t.Errorf("windows command:\n got %s\nwant %s", got, want)
	}
	if m, s := remote.RemoteFiles(`C:\models\mmproj.gguf`, "/m/Qwen3-00001-of-00009.gguf"); m != "mmproj.gguf" || s != "Qwen3-00001-of-00009.vocab.gguf" {
		t.Errorf("RemoteFiles = %q %q", m, s)
	}
	if remote.RemoteOS("", `C:\x`) != "windows" || remote.RemoteOS("", "/opt/x") != "linux" || remote.RemoteOS("windows", "") != "windows" {
		t.Error("RemoteOS")
	}
}

// A dialer that never answers until its context ends: the second PC is a
// black hole. READY must not wait for it, and ENC must end by the timeout.
func TestReadyAtOnceAndBoundedErrWhenThePCNeverAnswers(t *testing.T) {
	dial := func(ctx context.Context, timeout time.Duration) (remote.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		<-ctx.Done()
		return nil, errors.New("second PC 192.0.2.1 did not answer within 1 s")
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := New(Options{Host: "192.0.2.1", Dial: dial, NEmbd: 2560, ConnectTimeout: time.Second})
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), inR, outW); outW.Close() }()
	out := bufio.NewReader(outR)
	line, _ := out.ReadString('\n')
	if line != "READY 2560\n" {
		t.Fatalf("first line %q", line)
	}
	img := filepath.Join(t.TempDir(), "a.img")
	os.WriteFile(img, []byte("\x89PNG\r\n\x1a\nxx"), 0o644)
	io.WriteString(inW, "ENC "+img+" "+img[:len(img)-4]+".sve\n")
	got := make(chan string, 1)
	go func() { l, _ := out.ReadString('\n'); got <- l }()
	select {
	case l := <-got:
		if !strings.HasPrefix(l, "ERR ") || !strings.Contains(l, "did not answer") || !strings.Contains(l, "text still works") {
			t.Fatalf("reply %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ENC hung with the second PC unreachable")
	}
	io.WriteString(inW, "QUIT\n")
	if err := <-done; err != nil {
		t.Fatalf("Run after QUIT: %v", err)
	}
}
