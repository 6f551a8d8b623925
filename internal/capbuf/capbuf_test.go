package capbuf

import (
	"bytes"
	"testing"
)

func TestKeepsTheFirstMaxBytes(t *testing.T) {
	b := &Buffer{Max: 5}
	for _, p := range []string{"abc", "defg", "hij"} {
		if n, err := b.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d %v: a bounded write must still report all of it", p, n, err)
		}
	}
	if got := b.Bytes(); !bytes.Equal(got, []byte("abcde")) {
		t.Errorf("kept %q, want %q", got, "abcde")
	}
}
