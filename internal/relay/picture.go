package relay

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/strata-companion/companion/internal/framing"
)

// The picture's way to the agent: streamed from its file in chunks, so the
// relay holds at most one chunk of it (a 30 MiB picture costs no 30 MiB
// buffer), with the size cap enforced while reading.

// openPicture opens Strata's .img for streaming. Only a regular file is read:
// the open is non-blocking (a FIFO cannot hang it) and fstat refuses a device,
// a FIFO or a folder at once. The reply is "" or the ERR line for Strata.
func openPicture(img string) (*os.File, string) {
	f, err := os.OpenFile(img, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, "ERR cannot read the picture " + img + ": " + errText(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "ERR cannot read the picture " + img + ": " + errText(err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Sprintf("ERR %s is not a regular file (%s); Strata hands the encoder a picture file, so this request was not made by Strata", img, st.Mode().Type())
	}
	if st.Size() > framing.MaxPicture {
		f.Close()
		return nil, tooLarge(st.Size())
	}
	return f, ""
}

func tooLarge(size int64) string {
	return fmt.Sprintf("ERR the picture is %.1f MiB; pictures read on the second PC may be at most %d MiB (send a smaller one)",
		float64(size)/(1<<20), framing.MaxPicture>>20)
}

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, framing.HeaderSize+framing.ChunkSize); return &b }}

// sendPicture streams f to the agent as PictureBegin, PictureData...,
// PictureEnd. refused is an ERR line when the picture was refused on the way
// (it grew past the cap while being read, it became unreadable, ctx ended):
// the agent is told to drop it and the session stays usable. err means the
// stream to the agent broke; the session is lost.
func sendPicture(ctx context.Context, fw *framing.Writer, id uint32, f io.Reader) (refused string, err error) {
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	buf := *bp
	if err := fw.Write(framing.PictureBegin, framing.PutID(id)); err != nil {
		return "", err
	}
	abort := func(why string) (string, error) {
		return why, fw.Write(framing.PictureEnd, framing.PutID(id), []byte{framing.PictureAborted})
	}
	var total int64
	for {
		if ctx.Err() != nil {
			return abort("ERR the relay is stopping")
		}
		n, rerr := io.ReadFull(f, buf[framing.HeaderSize:])
		if n > 0 {
			total += int64(n)
			if total > framing.MaxPicture {
				return abort(fmt.Sprintf("ERR the picture grew past %d MiB while it was read; pictures read on the second PC may be at most %d MiB (send a smaller one)",
					framing.MaxPicture>>20, framing.MaxPicture>>20))
			}
			if err := fw.WriteFramed(framing.PictureData, buf[:framing.HeaderSize+n]); err != nil {
				return "", err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return abort("ERR cannot read the picture: " + errText(rerr))
		}
	}
	return "", fw.Write(framing.PictureEnd, framing.PutID(id), []byte{framing.PictureComplete})
}
