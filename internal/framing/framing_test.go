package framing

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	big := bytes.Repeat([]byte{0, 1, 2, '\n', '\'', '"'}, 100000) // bytes a shell or a line protocol would mangle
	if err := w.Write(Encode, PutID(7), big); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Ping); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Result, ResultHeader(7, "OK 1024 32 32 12"), []byte("SVE")); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&buf)
	typ, p, err := r.Next()
	if err != nil || typ != Encode {
		t.Fatalf("first frame: %q %v", typ, err)
	}
	id, body, err := SplitID(p)
	if err != nil || id != 7 || !bytes.Equal(body, big) {
		t.Fatalf("encode payload changed: id %d, %d bytes, %v", id, len(body), err)
	}
	typ, p, err = r.Next()
	if err != nil || typ != Ping || len(p) != 0 {
		t.Fatalf("ping: %q %d %v", typ, len(p), err)
	}
	typ, p, err = r.Next()
	if err != nil || typ != Result {
		t.Fatalf("result: %q %v", typ, err)
	}
	id, line, sve, err := SplitResult(p)
	if err != nil || id != 7 || line != "OK 1024 32 32 12" || string(sve) != "SVE" {
		t.Fatalf("result = %d %q %q %v", id, line, sve, err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("end of stream = %v, want io.EOF", err)
	}
}

func TestTruncatedAndOversized(t *testing.T) {
	var buf bytes.Buffer
	NewWriter(&buf).Write(Encode, []byte("12345678"))
	b := buf.Bytes()[:buf.Len()-3]
	if _, _, err := NewReader(bytes.NewReader(b)).Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated frame: %v, want io.ErrUnexpectedEOF", err)
	}
	huge := []byte{byte(Encode), 0xff, 0xff, 0xff, 0xff}
	if _, _, err := NewReader(bytes.NewReader(huge)).Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("4 GiB announcement: %v, want ErrTooLarge", err)
	}
	if err := NewWriter(io.Discard).Write(Encode, make([]byte, MaxPayload+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("writing too much: %v", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{'E', 0, 0, 0, 2, 1, 2})
	f.Add([]byte{'R', 0, 0, 0, 6, 0, 0, 0, 1, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		// Round trip: the frames read, written again, are exactly the bytes
		// they were read from.
		var again bytes.Buffer
		w := NewWriter(&again)
		for {
			typ, p, err := r.Next()
			if err != nil {
				if !bytes.HasPrefix(b, again.Bytes()) {
					t.Fatalf("frames written again differ from the input:\n%x\n%x", again.Bytes(), b)
				}
				if err == io.EOF && again.Len() != len(b) {
					t.Fatalf("clean end after %d of %d bytes", again.Len(), len(b))
				}
				return
			}
			if typ == Result {
				if id, line, sve, err := SplitResult(p); err == nil && len(line) <= 0xffff {
					if got := append(ResultHeader(id, line), sve...); !bytes.Equal(got, p) {
						t.Fatalf("result payload does not round-trip: %x -> %x", p, got)
					}
				}
			}
			if id, body, err := SplitID(p); err == nil && !bytes.Equal(append(PutID(id), body...), p) {
				t.Fatalf("id payload does not round-trip")
			}
			if err := w.Write(typ, p); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Frames written (whole or streamed) read back as written, in order.
func FuzzWriteRead(f *testing.F) {
	f.Add(byte('R'), uint32(7), "OK 1024 32 32 12", []byte("SVE1"), true)
	f.Add(byte('E'), uint32(0), "", []byte{}, false)
	f.Fuzz(func(t *testing.T, typ byte, id uint32, line string, body []byte, stream bool) {
		if len(line) > 0xffff {
			line = line[:0xffff] // a Result line's length is 16 bits
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		head := ResultHeader(id, line)
		var err error
		if stream {
			err = w.WriteStream(Type(typ), head, bytes.NewReader(body), int64(len(body)))
		} else {
			err = w.Write(Type(typ), head, body)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(Encode, PutID(id), body); err != nil {
			t.Fatal(err)
		}
		r := NewReader(&buf)
		gt, p, err := r.Next()
		if err != nil || gt != Type(typ) {
			t.Fatalf("first frame: %q %v", gt, err)
		}
		gid, gline, gbody, err := SplitResult(p)
		if err != nil || gid != id || gline != line || !bytes.Equal(gbody, body) {
			t.Fatalf("result frame: %d %q %x %v; want %d %q %x", gid, gline, gbody, err, id, line, body)
		}
		gt, p, err = r.Next()
		if err != nil || gt != Encode {
			t.Fatalf("second frame: %q %v", gt, err)
		}
		if gid, gbody, err := SplitID(p); err != nil || gid != id || !bytes.Equal(gbody, body) {
			t.Fatalf("encode frame: %d %x %v", gid, gbody, err)
		}
		if _, _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the frames: %v, want io.EOF", err)
		}
	})
}

func TestStreamedFrames(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	body := bytes.Repeat([]byte("sve!"), 50000)
	if err := w.WriteStream(Result, ResultHeader(2, "OK 1 1 1 0"), bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStream(Result, nil, bytes.NewReader(body[:10]), 20); err == nil {
		t.Fatal("a body shorter than announced was not reported")
	}
	r := NewReader(bytes.NewReader(buf.Bytes()))
	typ, n, err := r.NextHeader()
	if err != nil || typ != Result || n != 6+10+len(body) {
		t.Fatalf("header: %q %d %v", typ, n, err)
	}
	got, _ := io.ReadAll(r.Body(n))
	id, line, sve, err := SplitResult(got)
	if err != nil || id != 2 || line != "OK 1 1 1 0" || !bytes.Equal(sve, body) {
		t.Fatalf("streamed result: %d %q %d bytes %v", id, line, len(sve), err)
	}
}

func TestWriteFramedAndCopy(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	chunk := append(make([]byte, HeaderSize), "chunk\x00\n"...)
	if err := w.WriteFramed(PictureData, chunk); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFramed(PictureData, make([]byte, 2)); err == nil {
		t.Fatal("a buffer shorter than a header was accepted")
	}
	big := bytes.Repeat([]byte("0123456789"), CopyBufSize/4) // more than one copy buffer
	if err := w.WriteStream(Result, ResultHeader(1, "OK"), bytes.NewReader(big), int64(len(big))); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStream(Result, nil, bytes.NewReader(big[:10]), 11); err == nil {
		t.Fatal("a body shorter than announced gave no error")
	}
	r := NewReader(&buf)
	typ, p, err := r.Next()
	if err != nil || typ != PictureData || string(p) != "chunk\x00\n" {
		t.Fatalf("framed: %q %q %v", typ, p, err)
	}
	typ, n, err := r.NextHeader()
	if err != nil || typ != Result || n != 8+len(big) {
		t.Fatalf("stream header: %q %d %v", typ, n, err)
	}
	var got bytes.Buffer
	if c, err := Copy(&got, r.Body(n)); err != nil || c != int64(n) {
		t.Fatalf("Copy: %d %v", c, err)
	}
	if !bytes.Equal(got.Bytes()[8:], big) {
		t.Fatal("streamed body changed on its way")
	}
}
