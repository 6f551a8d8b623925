// Package capbuf is an output buffer with a size bound, safe for two
// writers (a program's stdout and stderr): a program that streams without
// end within its deadline only gets the rest dropped, never the reader's
// memory.
package capbuf

import (
	"bytes"
	"sync"
)

// Buffer keeps the first Max bytes written to it and drops the rest; each
// Write reports the whole of p written, so a program's pipe never stalls.
type Buffer struct {
	Max int

	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.Max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Bytes is a copy of what was kept.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
