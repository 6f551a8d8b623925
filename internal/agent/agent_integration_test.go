//go:build linux

package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/testenv"
)

// buildStandin builds the stand-in strata-vision and writes a wrapper that
// sets its knobs.
func buildStandin(t *testing.T, env string) (dir, encoder, mmproj, model string) {
	t.Helper()
	dir = t.TempDir()
	bin := testenv.Program(t, "github.com/strata-companion/companion/internal/fakeencoder/cmd/strata-vision-standin", testenv.BuildOptions{Dir: dir, Name: "standin"})
	encoder = filepath.Join(dir, "strata-vision")
	testenv.WriteExecutable(encoder, []byte("#!/bin/sh\n"+env+" exec "+bin+" \"$@\"\n"))
	mmproj, model = filepath.Join(dir, "mmproj.gguf"), filepath.Join(dir, "vocab.gguf")
	if err := fakeencoder.WriteMmproj(mmproj, 16); err != nil {
		t.Fatal(err)
	}
	fakeencoder.WriteModel(model, 5)
	return
}

type session struct {
	t    *testing.T
	w    *framing.Writer
	r    *framing.Reader
	in   *io.PipeWriter
	done chan error
	cfg  Config
}

func start(t *testing.T, cfg Config) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, w: framing.NewWriter(inW), r: framing.NewReader(outR), in: inW, done: make(chan error, 1), cfg: cfg}
	go func() { s.done <- Serve(context.Background(), cfg, inR, outW); outW.Close() }()
	typ, p := s.next()
	var info framing.Info
	if typ != framing.Hello || json.Unmarshal(p, &info) != nil || info.Proto != framing.Version {
		t.Fatalf("first frame %q %s", typ, p)
	}
	t.Cleanup(func() { s.end() })
	return s
}

// next returns the next frame that is not a Beat (the agent's proof of
// life while it works; TestBeatsWhileItWorks looks at those).
func (s *session) next() (framing.Type, []byte) {
	s.t.Helper()
	for {
		typ, p, err := s.r.Next()
		if err != nil {
			s.t.Fatalf("reading a frame: %v", err)
		}
		if typ != framing.Beat {
			return typ, p
		}
	}
}

// nextSkipping returns the next frame that is not an Event or a Beat.
func (s *session) nextSkipping(events *[]framing.AgentEvent) (framing.Type, []byte) {
	for {
		typ, p := s.next()
		if typ != framing.Event {
			return typ, p
		}
		var e framing.AgentEvent
		json.Unmarshal(p, &e)
		if events != nil {
			*events = append(*events, e)
		}
	}
}

func (s *session) end() error {
	s.in.Close()
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(20 * time.Second):
		s.t.Fatal("the agent did not end after its input closed")
		return nil
	}
}

func (s *session) status() framing.StatusInfo {
	s.w.Write(framing.AskStatus)
	typ, p := s.nextSkipping(nil)
	var st framing.StatusInfo
	if typ != framing.StatusReply || json.Unmarshal(p, &st) != nil {
		s.t.Fatalf("status: %q %s", typ, p)
	}
	return st
}

var png = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("px"), 1000)...)

func TestEncodeStatusAndCleanEnd(t *testing.T) {
	_, enc, mm, model := buildStandin(t, "")
	scratch := t.TempDir()
	smi := filepath.Join(t.TempDir(), "nvidia-smi")
	testenv.WriteExecutable(smi, []byte("#!/bin/sh\necho '0, NVIDIA GeForce RTX 3060 Laptop GPU, 6144, 1417, 4727, 581.42'\n"))
	s := start(t, Config{Encoder: enc, Mmproj: mm, Model: model, MaxTokens: 8, ScratchParent: scratch, NvidiaSMI: smi})

	var evs []framing.AgentEvent
	s.w.Write(framing.Encode, framing.PutID(3), png)
	typ, p := s.nextSkipping(&evs)
	id, line, sve, err := framing.SplitResult(p)
	if typ != framing.Result || err != nil || id != 3 || !strings.HasPrefix(line, "OK 8 2 4 ") {
		t.Fatalf("result %q: id %d line %q err %v", typ, id, line, err)
	}
	if !bytes.Equal(sve, fakeencoder.SVE(png, 8, 16)) {
		t.Fatal("the .sve bytes differ from the encoder's")
	}
	if len(evs) != 1 || evs[0].Kind != "started" || evs[0].NEmbd != 16 {
		t.Fatalf("events before the first result: %+v (keep-running mode starts at once)", evs)
	}
	s.w.Write(framing.Encode, framing.PutID(4), []byte("not a picture"))
	typ, p = s.nextSkipping(nil)
	if typ != framing.Error || !strings.Contains(string(p[4:]), "cannot read the image") {
		t.Fatalf("a non-picture gave %q %q", typ, p)
	}
	st := s.status()
	if st.Encoder != "running" || st.PID == 0 || st.Pictures != 1 || st.ScratchFiles != 0 || len(st.GPUs) != 1 || st.GPUs[0].FreeMiB != 4727 {
		t.Fatalf("status %+v", st)
	}
	if err := s.end(); err != nil {
		t.Fatalf("a clean end returned %v", err)
	}
	if processAlive(st.PID) {
		// Reaped processes vanish; a zombie would still answer kill(0).
		t.Fatalf("encoder %d still runs after the session ended", st.PID)
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Fatalf("scratch left behind: %v", ents)
	}
}

func TestIdleStopAndWake(t *testing.T) {
	_, enc, mm, model := buildStandin(t, "")
	s := start(t, Config{Encoder: enc, Mmproj: mm, Model: model, MaxTokens: 4, IdleStop: time.Second, ScratchParent: t.TempDir()})
	if st := s.status(); st.Encoder != "stopped" {
		t.Fatalf("with an idle stop the encoder waits for the first picture; state %q", st.Encoder)
	}
	var evs []framing.AgentEvent
	s.w.Write(framing.Encode, framing.PutID(1), png)
	if typ, _ := s.nextSkipping(&evs); typ != framing.Result || len(evs) != 1 || evs[0].Kind != "woke" {
		t.Fatalf("first picture: %q, events %+v", typ, evs)
	}
	typ, p := s.next() // the idle stop arrives by itself
	var e framing.AgentEvent
	json.Unmarshal(p, &e)
	if typ != framing.Event || e.Kind != "idle_stopped" || e.IdleS != 1 {
		t.Fatalf("expected an idle stop, got %q %s", typ, p)
	}
	if st := s.status(); st.Encoder != "stopped" || st.PID != 0 {
		t.Fatalf("after the idle stop: %+v", st)
	}
	evs = nil
	s.w.Write(framing.Encode, framing.PutID(2), png)
	if typ, _ := s.nextSkipping(&evs); typ != framing.Result || len(evs) != 1 || evs[0].Kind != "woke" {
		t.Fatalf("picture after idle stop: %q, events %+v", typ, evs)
	}
}

func TestEncoderDiesMidPicture(t *testing.T) {
	_, enc, mm, model := buildStandin(t, "STRATA_STANDIN_ENCODE_MS=3000")
	s := start(t, Config{Encoder: enc, Mmproj: mm, Model: model, MaxTokens: 4, ScratchParent: t.TempDir()})
	pid := s.status().PID
	s.w.Write(framing.Encode, framing.PutID(9), png)
	time.Sleep(300 * time.Millisecond)
	syscall.Kill(pid, syscall.SIGKILL)
	typ, p := s.nextSkipping(nil)
	if typ != framing.Error || !strings.Contains(string(p), "stopped") {
		t.Fatalf("after the encoder died: %q %q", typ, p)
	}
	if st := s.status(); st.Encoder != "failed" || st.ScratchFiles != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestFailedStartIsReported(t *testing.T) {
	_, enc, _, model := buildStandin(t, "")
	s := start(t, Config{Encoder: enc, Mmproj: "/nonexistent.gguf", Model: model, IdleStop: time.Minute, ScratchParent: t.TempDir()})
	s.w.Write(framing.Encode, framing.PutID(1), png)
	var evs []framing.AgentEvent
	typ, p := s.nextSkipping(&evs)
	if typ != framing.Error || !strings.Contains(string(p), "did not start") || !strings.Contains(string(p), "cannot load the vision encoder") {
		t.Fatalf("%q %q", typ, p)
	}
	if len(evs) != 1 || evs[0].Kind != "failed" {
		t.Fatalf("events %+v", evs)
	}
}

func TestUploadResumesAndVerifies(t *testing.T) {
	dir := t.TempDir()
	s := start(t, Config{Dir: dir, ScratchParent: t.TempDir()})
	data := bytes.Repeat([]byte("0123456789abcdef"), 50000)
	sum := sha256.Sum256(data)
	hdr := framing.PutHeader{Name: "mmproj.gguf", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Mode: 0o644}
	s.w.WriteJSON(framing.PutBegin, hdr)
	s.w.Write(framing.PutData, data[:300000])
	s.end() // the connection drops mid-upload
	if _, err := os.Stat(filepath.Join(dir, "mmproj.gguf")); err == nil {
		t.Fatal("a half upload is visible under its final name")
	}

	s = start(t, Config{Dir: dir, ScratchParent: t.TempDir()})
	s.w.WriteJSON(framing.Stat, map[string]string{"name": "mmproj.gguf"})
	typ, p := s.next()
	var fi framing.FileInfo
	json.Unmarshal(p, &fi)
	if typ != framing.StatReply || fi.Exists || fi.PartialSize != 300000 {
		t.Fatalf("stat after a broken upload: %q %+v", typ, fi)
	}
	hdr.Offset = fi.PartialSize
	s.w.WriteJSON(framing.PutBegin, hdr)
	s.w.Write(framing.PutData, data[hdr.Offset:])
	s.w.Write(framing.PutEnd)
	typ, p = s.next()
	json.Unmarshal(p, &fi)
	if typ != framing.PutReply || fi.SHA256 != hdr.SHA256 {
		t.Fatalf("resumed upload: %q %s", typ, p)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "mmproj.gguf")); !bytes.Equal(got, data) {
		t.Fatal("the uploaded file differs")
	}
	// A damaged upload is refused and never replaces the good file.
	bad := hdr
	bad.Offset = 0
	s.w.WriteJSON(framing.PutBegin, bad)
	s.w.Write(framing.PutData, append([]byte("X"), data[1:]...))
	s.w.Write(framing.PutEnd)
	if typ, p = s.next(); typ != framing.Error || !strings.Contains(string(p), "damaged") {
		t.Fatalf("damaged upload: %q %q", typ, p)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "mmproj.gguf")); !bytes.Equal(got, data) {
		t.Fatal("a damaged upload replaced the file")
	}
	for _, name := range []string{"../evil", "/etc/passwd", "a/b", ".."} {
		s.w.WriteJSON(framing.PutBegin, framing.PutHeader{Name: name, Size: 1})
		if typ, _ := s.next(); typ != framing.Error {
			t.Fatalf("upload to %q was accepted", name)
		}
	}
}

// TestBeatsWhileItWorks: while the agent starts its encoder and reads a
// picture it sends Beat frames (its Hello says how often), naming the
// picture and what it does, so the relay can tell it from a stopped one.
func TestBeatsWhileItWorks(t *testing.T) {
	_, enc, mm, model := buildStandin(t, "STRATA_STANDIN_START_MS=400 STRATA_STANDIN_ENCODE_MS=400")
	s := start(t, Config{Encoder: enc, Mmproj: mm, Model: model, MaxTokens: 4, IdleStop: time.Minute, ScratchParent: t.TempDir(), BeatEvery: 100 * time.Millisecond})
	s.w.Write(framing.Encode, framing.PutID(7), png)
	phases := map[string]int{}
	for {
		typ, p, err := s.r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if typ == framing.Beat {
			var b framing.BeatInfo
			if json.Unmarshal(p, &b) != nil || b.ID != 7 {
				t.Fatalf("beat %s", p)
			}
			phases[b.Phase]++
			continue
		}
		if typ == framing.Result {
			break
		}
	}
	if phases[framing.PhaseStarting] == 0 || phases[framing.PhaseEncoding] == 0 {
		t.Errorf("beats by phase %v: want some while starting and while encoding", phases)
	}
	s.end()
}
