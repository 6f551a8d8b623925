//go:build linux

package agent

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/framing"
)

// sendStreamed sends data as the relay streams a picture, in chunks of at
// most framing.ChunkSize, ending with status.
func (s *session) sendStreamed(id uint32, data []byte, status byte) {
	s.t.Helper()
	if err := s.w.Write(framing.PictureBegin, framing.PutID(id)); err != nil {
		s.t.Fatal(err)
	}
	for len(data) > 0 {
		n := min(len(data), framing.ChunkSize)
		if err := s.w.Write(framing.PictureData, data[:n]); err != nil {
			s.t.Fatal(err)
		}
		data = data[n:]
	}
	if err := s.w.Write(framing.PictureEnd, framing.PutID(id), []byte{status}); err != nil {
		s.t.Fatal(err)
	}
}

// A streamed picture (several chunks) arrives byte-identical; an aborted one
// is dropped without a reply and leaves no scratch file; a picture that
// streams past the cap is refused and the session stays usable.
func TestStreamedPictures(t *testing.T) {
	_, enc, mm, model := buildStandin(t, "")
	scratch := t.TempDir()
	s := start(t, Config{Encoder: enc, Mmproj: mm, Model: model, MaxTokens: 8, ScratchParent: scratch})

	big := append(append([]byte{}, png...), bytes.Repeat([]byte{0, '\n', 0xff}, framing.ChunkSize)...) // 3+ chunks
	s.sendStreamed(5, big, framing.PictureComplete)
	typ, p := s.nextSkipping(nil)
	id, line, sve, err := framing.SplitResult(p)
	if typ != framing.Result || err != nil || id != 5 || !strings.HasPrefix(line, "OK 8 ") {
		t.Fatalf("streamed picture: %q id %d line %q err %v %q", typ, id, line, err, p)
	}
	if !bytes.Equal(sve, fakeencoder.SVE(big, 8, 16)) {
		t.Fatal("the .sve of a streamed picture differs from the encoder's own: the picture changed on its way")
	}

	s.sendStreamed(6, big, framing.PictureAborted)
	// The next reply must be about picture 7: the aborted one gets none.
	s.sendStreamed(7, png, framing.PictureComplete)
	typ, p = s.nextSkipping(nil)
	if id, _, _, _ := framing.SplitResult(p); typ != framing.Result || id != 7 {
		t.Fatalf("after an aborted picture: %q %q, want the result of 7", typ, p)
	}
	if st := s.status(); st.ScratchFiles != 0 {
		t.Fatalf("%d scratch files after an aborted picture", st.ScratchFiles)
	}

	// Past the cap: the agent counts as it writes (a relay that lied).
	if err := s.w.Write(framing.PictureBegin, framing.PutID(8)); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, framing.ChunkSize)
	for sent := 0; sent <= framing.MaxPicture; sent += len(chunk) {
		s.w.Write(framing.PictureData, chunk)
	}
	s.w.Write(framing.PictureEnd, framing.PutID(8), []byte{framing.PictureComplete})
	typ, p = s.nextSkipping(nil)
	if typ != framing.Error || !strings.Contains(string(p[4:]), "at most 32 MiB") {
		t.Fatalf("a picture over the cap gave %q %q", typ, p)
	}
	s.sendStreamed(9, png, framing.PictureComplete)
	if typ, p = s.nextSkipping(nil); typ != framing.Result {
		t.Fatalf("after a refused picture: %q %q", typ, p)
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 1 {
		t.Fatalf("scratch parent holds %d entries, want the one scratch folder", len(ents))
	}
	if st := s.status(); st.ScratchFiles != 0 {
		t.Fatalf("%d scratch files after a refused picture", st.ScratchFiles)
	}
}

// Data without a begun picture is a protocol error that ends the session
// with an error that says what to do.
func TestPictureDataWithoutBegin(t *testing.T) {
	s := start(t, Config{ScratchParent: t.TempDir()})
	go s.w.Write(framing.PictureData, []byte("x")) // the agent stops reading at the header
	select {
	case err := <-s.done:
		s.done <- err
		if err == nil || !strings.Contains(err.Error(), "remote prepare") {
			t.Fatalf("session end = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not end on a protocol error")
	}
}
