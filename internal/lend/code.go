// Package lend is the one definition of how a second PC lends its GPU to
// this PC: the pairing code, the announcement on the LAN, and the pairing
// exchange, for both sides. The lender (strata-service lend, on the second
// PC) mints a code and serves the exchange; this PC (remote pair --code)
// runs the other half. The exchange is CPace (the CFRG's balanced PAKE) on
// ristretto255: the code authenticates both sides, a passive listener learns
// nothing it could test offline, and each run lets a party without the code
// test exactly one guess, which the lender counts (docs/security.md).
package lend

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Alphabet is the code's characters: digits and capital letters without
// the look-alikes 0/O and 1/I/L. 31 characters.
const Alphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"

// CodeLen is a code's length: 8 characters, about 39.6 bits. With at most
// MaxTries guesses per code, a guesser wins with probability 5/31^8
// (about 6e-12); docs/security.md has the reasoning.
const CodeLen = 8

// MaxTries wrong codes burn a code; DefaultValid is how long one lives.
const (
	MaxTries     = 5
	DefaultValid = 10 * time.Minute
)

// Code is a normalised pairing code: CodeLen characters of Alphabet.
type Code string

// NewCode draws a fresh code from crypto/rand.
func NewCode() (Code, error) {
	b := make([]byte, CodeLen)
	n := big.NewInt(int64(len(Alphabet)))
	for i := range b {
		x, err := rand.Int(rand.Reader, n)
		if err != nil {
			return "", err
		}
		b[i] = Alphabet[x.Int64()]
	}
	return Code(b), nil
}

// ErrCodeForm says a typed code is not a code at all (nothing was tried).
var ErrCodeForm = errors.New("not a pairing code")

// ParseCode reads a code as a person types it: case, spaces and dashes do
// not matter.
func ParseCode(s string) (Code, error) {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch {
		case r == ' ' || r == '-' || r == '\t':
			continue
		case strings.ContainsRune(Alphabet, r):
			b.WriteRune(r)
		case r == '0' || r == 'O' || r == '1' || r == 'I' || r == 'L':
			return "", fmt.Errorf("%w: a code has no %q (it uses the digits 2-9 and the letters other than I, L and O); read it again from the other PC's screen", ErrCodeForm, r)
		default:
			return "", fmt.Errorf("%w: %q is not one of its characters (the digits 2-9 and the letters other than I, L and O)", ErrCodeForm, r)
		}
	}
	if b.Len() != CodeLen {
		return "", fmt.Errorf("%w: it has %d characters, a code has %d (like ABCD-EFGH)", ErrCodeForm, b.Len(), CodeLen)
	}
	return Code(b.String()), nil
}

// String shows the code as people read it: two groups of four.
func (c Code) String() string {
	if len(c) != CodeLen {
		return string(c)
	}
	return string(c[:4]) + "-" + string(c[4:])
}

// DefaultPairPort is the lender's TCP port for the pairing exchange.
const DefaultPairPort = 7390
