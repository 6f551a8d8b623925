package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/strata-companion/companion/internal/framing"
)

// inFrame is one frame from the relay, or (PictureEnd) a picture the reader
// already streamed into the scratch folder.
type inFrame struct {
	t    framing.Type
	p    []byte
	err  error
	id   uint32 // PictureEnd: the picture
	path string // PictureEnd: its file in the scratch folder
}

func (a *agent) picturePath(id uint32) string {
	return filepath.Join(a.scratch, strconv.FormatUint(uint64(id), 10)+".img")
}

// pictureIn is the picture being received.
type pictureIn struct {
	id   uint32
	f    *os.File
	path string
	size int64
	err  error // the first write error (the rest of the picture is drained)
	// stopBeat ends its "receiving" beats: while a picture streams in, the
	// relay hears from the agent every second, so a slow link still
	// draining the picture is not taken for a lost one.
	stopBeat func()
}

// readFrames reads the relay's frames. A streamed picture (PictureBegin,
// PictureData..., PictureEnd) goes from the stream straight into its
// scratch file here, chunk by chunk, with the size cap enforced as it
// arrives: the agent never holds a picture in memory. Every other frame is
// passed on whole.
func (a *agent) readFrames(fr *framing.Reader, frames chan<- inFrame, stop <-chan struct{}) {
	var pic *pictureIn
	buf := make([]byte, framing.ChunkSize)
	drop := func() {
		if pic != nil {
			pic.stopBeat()
			if pic.f != nil {
				pic.f.Close()
			}
			os.Remove(pic.path)
			pic = nil
		}
	}
	defer drop()
	send := func(f inFrame) bool {
		if f.err != nil && f.t != framing.PictureEnd {
			// The relay's side ended (or broke): a picture being encoded
			// meanwhile is given up at once (encoder.request watches this).
			a.endInput()
		}
		select {
		case frames <- f:
			return true
		case <-stop:
			return false
		}
	}
	for {
		t, n, err := fr.NextHeader()
		if err != nil {
			send(inFrame{err: err})
			return
		}
		if t == framing.PictureData {
			if pic == nil {
				// Data of a picture that was not begun: a protocol error.
				send(inFrame{err: errors.New("picture data without a picture (relay and agent versions differ? run `strata-service remote prepare`)")})
				return
			}
			if err := pic.receive(fr.Body(n), n, buf); err != nil {
				send(inFrame{err: err})
				return
			}
			continue
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(fr.Body(n), p); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			send(inFrame{err: err})
			return
		}
		switch t {
		case framing.PictureBegin:
			drop()
			id, _, err := framing.SplitID(p)
			if err != nil {
				send(inFrame{err: err})
				return
			}
			pic = &pictureIn{id: id, path: a.picturePath(id), stopBeat: a.beating(id, framing.PhaseReceiving)}
			pic.f, pic.err = os.OpenFile(pic.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if pic.err != nil {
				pic.f = nil
				pic.err = fmt.Errorf("cannot write the picture on the second PC: %v (is its disk full?)", pic.err)
			}
			continue
		case framing.PictureEnd:
			id, rest, err := framing.SplitID(p)
			if err != nil || len(rest) != 1 || pic == nil || pic.id != id {
				drop()
				send(inFrame{err: errors.New("a picture's end without its beginning (relay and agent versions differ? run `strata-service remote prepare`)")})
				return
			}
			if rest[0] != framing.PictureComplete {
				drop() // the relay refused it and told Strata why
				continue
			}
			pic.stopBeat()
			done := inFrame{t: framing.PictureEnd, id: id, path: pic.path, err: pic.err}
			if pic.f != nil {
				if cerr := pic.f.Close(); cerr != nil && done.err == nil {
					done.err = fmt.Errorf("cannot write the picture on the second PC: %v (is its disk full?)", cerr)
				}
			}
			pic = nil // the encoder loop owns the file now
			if !send(done) {
				os.Remove(done.path)
				return
			}
			continue
		}
		if !send(inFrame{t: t, p: p}) {
			return
		}
	}
}

// receive writes one chunk of n bytes from body into the picture's file.
// A file error is kept (the picture then fails with it) and the bytes are
// drained; only a stream error is returned.
func (pic *pictureIn) receive(body io.Reader, n int, buf []byte) error {
	pic.size += int64(n)
	if pic.size > framing.MaxPicture && pic.err == nil {
		pic.err = fmt.Errorf("the picture is over %d MiB; pictures read on the second PC may be at most %d MiB (send a smaller one)", framing.MaxPicture>>20, framing.MaxPicture>>20)
		pic.f.Close()
		pic.f = nil
		os.Remove(pic.path)
	}
	for n > 0 {
		k, err := io.ReadFull(body, buf[:min(n, len(buf))])
		n -= k
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if pic.f != nil && pic.err == nil {
			if _, werr := pic.f.Write(buf[:k]); werr != nil {
				pic.err = fmt.Errorf("cannot write the picture on the second PC: %v (is its disk full?)", werr)
			}
		}
	}
	return nil
}
