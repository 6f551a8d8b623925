package sshx

import (
	"fmt"
	"io"
	"os"
)

// MaxKeyFile bounds a private key file: an OpenSSH ed25519 key is ~400
// bytes, a 16384-bit RSA one ~13 KiB; 64 KiB is far above any real key.
const MaxKeyFile = 64 << 10

// readKeyFile reads a key file that must be a regular file of sane size: a
// FIFO is opened without waiting for a writer and refused, a device
// (/dev/zero) or anything larger than MaxKeyFile is refused without reading
// it through, so a hostile path can neither hang nor exhaust memory.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); a key file is a plain file", path, st.Mode().Type())
	}
	if st.Size() > MaxKeyFile {
		return nil, fmt.Errorf("%s is %d bytes, more than any private key (at most %d)", path, st.Size(), MaxKeyFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxKeyFile {
		return nil, fmt.Errorf("%s grew past %d bytes while read; a key file does not", path, MaxKeyFile)
	}
	return b, nil
}
