//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/testenv"
)

// TestLinkCutMidPictureIntegration: the second PC sits in a network namespace behind a
// 2 Mbit/s link; the link is cut (the namespace's side of the veth down: no
// reset, no answer, as a pulled cable or a frozen PC) in the middle of a
// picture's upload, of its encode and of its result's download. Each time the
// picture gets an ERR within seconds that says the link was lost and during
// what (not "the agent stopped answering": that is a hung agent, whose link
// still answers), text-side lines are answered at once right after, and once
// the link is back the next picture is read there, byte-identical. The
// cut-to-ERR times are logged (the bound is internal/framing/bounds.LinkLost:
// 3 s of nothing from the second PC); the test allows 10 s.
func TestLinkCutMidPictureIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("network namespaces")
	}
	ns := testenv.NewNetns(t, testenv.NetnsOptions{RateMbit: 2})
	g := newRig(t, testenv.SSHDOptions{Netns: ns.Name, ListenHost: ns.PeerAddr}, "")
	t.Cleanup(func() { ns.RestoreLink() })
	encoder := filepath.Join(g.remoteDir, "strata-vision")
	// encoderEnv sets what the next encoder started on the second PC does
	// (the wrapper script is read at each start).
	encoderEnv := func(env string) {
		testenv.WriteExecutable(encoder, []byte("#!/bin/sh\n"+env+" exec "+filepath.Join(g.remoteDir, "standin-bin")+" \"$@\"\n"))
	}
	g.start()
	if l, data, got, _ := g.picture(); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("picture on the live link: %q", l)
	} else {
		g.checkSVE("live", got, data)
	}
	// A healthy picture that takes seconds on this link: 1 MiB fits in
	// the ssh window, so the relay has written it all at once and then
	// waits ~4 s while it drains, hearing only the agent's "receiving"
	// beats; that is no lost link.
	big := append([]byte("\xff\xd8\xff\xe0JFIF"), make([]byte, 1<<20)...)
	for j := 8; j < len(big); j++ {
		big[j] = byte(j * 7)
	}
	bigImg, bigOut := filepath.Join(g.tmp, "slow.img"), filepath.Join(g.tmp, "slow.sve")
	os.WriteFile(bigImg, big, 0o600)
	fmt.Fprintf(g.stdin, "ENC %s %s\n", bigImg, bigOut)
	if l, d := g.line(60 * time.Second); !strings.HasPrefix(l, "OK ") {
		t.Fatalf("a 1 MiB picture on the live 2 Mbit/s link got %q after %v", l, d)
	} else {
		got, _ := os.ReadFile(bigOut)
		g.checkSVE("a 1 MiB picture", got, big)
		t.Logf("a 1 MiB picture on the live 2 Mbit/s link: OK in %v", d)
	}

	// scratchImgs are the pictures in the scratch folders of the agents
	// on the second PC, with their sizes (each is there from the picture's
	// first bytes to its reply; named by the relay's picture id, so a new
	// picture's is a new name).
	scratchImgs := func() map[string]int64 {
		all := map[string]int64{}
		for _, pid := range g.remoteProcs() {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); filepath.Base(exe) != "strata-vision-relay" {
				continue
			}
			m, _ := filepath.Glob(filepath.Join(tempDirOf(pid), fmt.Sprintf("strata-vision-relay-%d-*", pid), "*.img"))
			for _, f := range m {
				if st, err := os.Stat(f); err == nil {
					all[f] = st.Size()
				}
			}
		}
		return all
	}
	var before map[string]int64
	var started int // vision.ready events before the phase's picture
	// newImg is the size of this phase's picture on the second PC so far.
	newImg := func() int64 {
		for f, n := range scratchImgs() {
			if _, old := before[f]; !old {
				return n
			}
		}
		return 0
	}
	// An agent cut off from the relay ends when its sshd notices, or
	// after its own 60 s of silence: none may outlive the test.
	t.Cleanup(func() {
		for _, pid := range g.remoteProcs() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// partialResult is the .sve's temporary file beside out while the
	// result streams in.
	partialResult := func(out string) int64 {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*"))
		for _, f := range m {
			if st, err := os.Stat(f); err == nil {
				return st.Size()
			}
		}
		return 0
	}

	type phase struct {
		name   string
		env    string   // the second PC's encoder
		tokens int      // image tokens: the .sve is 20 + 4 x tokens x n_embd bytes
		size   int      // the picture's bytes
		words  []string // what the ERR must say happened (one of)
		ready  func(size int, out string) bool
	}
	phases := []phase{
		{name: "upload", size: 3 << 20, tokens: rigTokens, words: []string{"while the picture was sent to it"},
			// at 2 Mbit/s, 3 MiB take ~12 s: cut once 256 KiB are there
			ready: func(int, string) bool { return newImg() >= 256<<10 }},
		{name: "encode", env: "STRATA_STANDIN_ENCODE_MS=20000", size: 4000, tokens: rigTokens + 1, words: []string{"while it was reading the picture", "while its encoder was starting"},
			// the whole picture is there and the new agent's encoder has
			// started (it starts as the picture streams in): the 20 s
			// encode is on. The agent's first "encoding" beat may still be
			// on its way: the relay then last heard "starting" and says so.
			ready: func(size int, _ string) bool {
				return newImg() == int64(size) && g.svc.count(events.EncoderReady) > started
			}},
		{name: "download", env: "STRATA_STANDIN_NO_DEVICE_TIME=1", size: 4000, tokens: 16384, words: []string{"while the result came back"},
			// a 2 MiB .sve at 2 Mbit/s takes ~8 s: cut once 64 KiB are here
			ready: func(_ int, out string) bool { return partialResult(out) >= 64<<10 }},
	}
	// Each phase's image tokens differ from the last: another encoder
	// command line, so a new agent starts its encoder with the phase's
	// environment.
	for i, p := range phases {
		encoderEnv(p.env)
		g.st.Remote.MaxTokens = p.tokens
		g.save()
		data := append([]byte("\xff\xd8\xff\xe0JFIF"), make([]byte, p.size-8)...)
		for j := 8; j < len(data); j++ {
			data[j] = byte(j * (i + 3))
		}
		img, out := filepath.Join(g.tmp, p.name+".img"), filepath.Join(g.tmp, p.name+".sve")
		os.WriteFile(img, data, 0o600)
		connected := g.svc.count(events.RemoteConnected)
		before = scratchImgs()
		started = g.svc.count(events.EncoderReady)
		fmt.Fprintf(g.stdin, "ENC %s %s\n", img, out)
		testenv.WaitFor(t, 60*time.Second, "the picture's "+p.name+" under way", func() bool { return p.ready(p.size, out) })
		if err := ns.CutLink(); err != nil {
			t.Fatal(err)
		}
		l, took := g.line(10 * time.Second)
		t.Logf("link cut during the %s: ERR after %v: %s", p.name, took, l)
		said := false
		for _, w := range p.words {
			said = said || strings.Contains(l, w)
		}
		if !strings.HasPrefix(l, "ERR ") || !strings.Contains(l, "link to second PC") || !strings.Contains(l, "was lost") ||
			!said || strings.Contains(l, "stopped answering") {
			t.Errorf("the picture whose link was cut during the %s got %q; want an ERR saying the link was lost %s", p.name, l, strings.Join(p.words, " or "))
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("a result %s was left after the %s was cut", out, p.name)
		}
		if partialResult(out) != 0 {
			t.Errorf("a partial result was left beside %s", out)
		}
		// Text goes on: the next lines are answered at once.
		io.WriteString(g.stdin, "\n")
		if l, d := g.line(2 * time.Second); !strings.HasPrefix(l, "ERR an empty request line") {
			t.Errorf("the line after the ERR got %q", l)
		} else {
			t.Logf("the next line was answered in %v", d)
		}
		fmt.Fprintf(g.stdin, "ENC %s %s\n", img, out)
		if l, d := g.line(2 * time.Second); !strings.HasPrefix(l, "ERR ") {
			t.Errorf("a picture while the link is down got %q", l)
		} else {
			t.Logf("a picture while the link is down: answered in %v: %s", d, l)
		}
		// The link comes back: the next picture is read there again.
		encoderEnv("")
		g.st.Remote.MaxTokens = rigTokens
		g.save()
		if err := ns.RestoreLink(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(40 * time.Second)
		for {
			l, data, got, _ := g.picture()
			if strings.HasPrefix(l, "OK ") {
				g.checkSVE("after the link came back", got, data)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no picture was read within 40 s of the link coming back: %q", l)
			}
			// Known down until the background retry reaches it again.
			testenv.WaitFor(t, 20*time.Second, "a new connection to the second PC", func() bool {
				return g.svc.count(events.RemoteConnected) > connected
			})
			connected = g.svc.count(events.RemoteConnected)
		}
	}
	g.quit()
	g.noStrataLines()
}

// TestLostLinkTextWaitsNoLongerIntegration: the relay runs under the stand-in Strata
// server (which reads pictures under its request FIFO, as Strata's main
// repository does); the second PC's link is cut while it reads a picture
// (a 20 s encode): the picture gets its 400 within seconds, saying the link
// was lost, and a text request sent meanwhile waits no longer than that.
func TestLostLinkTextWaitsNoLongerIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("network namespaces")
	}
	ns := testenv.NewNetns(t, testenv.NetnsOptions{})
	g := newRig(t, testenv.SSHDOptions{Netns: ns.Name, ListenHost: ns.PeerAddr}, "STRATA_STANDIN_ENCODE_MS=20000")
	t.Cleanup(func() {
		ns.RestoreLink()
		for _, pid := range g.remoteProcs() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	post := g.standinServer()
	pic, text := make(chan standinAnswer, 1), make(chan standinAnswer, 1)
	go post("/standin/encode", "\x89PNG\r\n\x1a\npicture whose link is cut", pic)
	g.pictureThere()
	if err := ns.CutLink(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	go post("/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, text)
	var p, x standinAnswer
	select {
	case p = <-pic:
	case <-time.After(15 * time.Second): // the 20 s encode would come later
		t.Fatal("the picture whose link was cut got no answer within 15 s")
	}
	select {
	case x = <-text:
	case <-time.After(10 * time.Second):
		t.Fatal("the text request got no answer within 10 s of the picture's")
	}
	if p.code != 400 || !strings.Contains(p.body, "link to second PC") || !strings.Contains(p.body, "was lost") {
		t.Errorf("the picture: %d %s", p.code, p.body)
	}
	if x.code != 200 {
		t.Errorf("the text request: %d %s", x.code, x.body)
	}
	t.Logf("link cut: picture answered after %v, text after %v (it waited behind the picture): %s", p.at.Sub(t0), x.at.Sub(t0), p.body)
}
