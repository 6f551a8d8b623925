package lend

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gtank/ristretto255"
)

// Version is the exchange's version (m1's "v").
const Version = 1

// ExchangeTimeout bounds one whole exchange on either side.
const ExchangeTimeout = 30 * time.Second

// maxFrame bounds one message of the exchange.
const maxFrame = 64 << 10

// Request is what this PC asks the lender for. It travels in the clear
// (none of it is secret) but the code authenticates it: the lender acts on
// exactly these bytes or on nothing.
type Request struct {
	// PublicKey is this PC's companion key, authorized_keys form.
	PublicKey string `json:"public_key"`
	// Comment names the line on the lender (the one lend stop removes).
	Comment string `json:"comment"`
	// From is this PC's name, shown by lend status.
	From string `json:"from"`
	// Allow are the sha256 sums of the encoder builds prepare may install
	// through the gate; Encoder an absolute encoder path there.
	Allow   []string `json:"allow,omitempty"`
	Encoder string   `json:"encoder,omitempty"`
}

// Grant is what the lender did for the request, authenticated by the code:
// the host key to pin and where the forced agent lives.
type Grant struct {
	Name     string `json:"name"`
	HostKey  string `json:"host_key"` // the ssh host key, authorized_keys form
	User     string `json:"user"`
	Port     int    `json:"port"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	AgentDir string `json:"agent_dir"`
	KeysFile string `json:"keys_file"`
	MAC      string `json:"mac,omitempty"`
}

// Refusal kinds: why the lender would not pair.
const (
	RefusedWrong   = "wrong"   // the code did not match (one try used)
	RefusedExpired = "expired" // the code's time ran out
	RefusedUsed    = "used"    // the code paired a PC already
	RefusedBurned  = "burned"  // MaxTries wrong codes were tried
	RefusedNone    = "none"    // the lender shows no code
	RefusedFailed  = "failed"  // the code was right, the lender's own work failed
)

// RefusedError is the lender's answer when it did not pair. It is not
// authenticated (a party without the code can send it too): it is shown,
// never acted on.
type RefusedError struct {
	Kind      string `json:"error"`
	Message   string `json:"message,omitempty"`
	TriesLeft int    `json:"tries_left,omitempty"`
}

// NewCodeHint is what to do after any refusal of the code.
const NewCodeHint = "on the PC that lends its GPU, get a new code (its tray menu: Lend this PC's GPU, or `strata-service lend code`) and pair again"

func (e *RefusedError) Error() string {
	switch e.Kind {
	case RefusedWrong:
		left := ""
		if e.TriesLeft > 0 {
			left = fmt.Sprintf(" (%d more tries before the code stops working)", e.TriesLeft)
		}
		return "the pairing code is not the one that PC shows" + left + ": check it, or " + NewCodeHint
	case RefusedExpired:
		return "the pairing code has expired: " + NewCodeHint
	case RefusedUsed:
		return "the pairing code was used already (each code pairs one PC once): " + NewCodeHint
	case RefusedBurned:
		return fmt.Sprintf("the pairing code stopped working after %d wrong tries: %s", MaxTries, NewCodeHint)
	case RefusedNone:
		return "that PC is not showing a pairing code now: " + NewCodeHint
	case RefusedFailed:
		return "the code was right, but that PC could not finish the pairing: " + e.Message
	}
	return "the lender refused: " + e.Kind + " " + e.Message
}

// ErrImpostor: the party answering did not prove it knows the code. Nothing
// it said is trusted; nothing was changed.
var ErrImpostor = errors.New("the PC that answered does not know this pairing code, so it is not the PC showing it " +
	"(another PC on the network may be pretending to be it): nothing was trusted or changed; pick the PC by its address, or pair again")

// Book is the lender's code: the one valid now and the outcome of each try.
type Book interface {
	// Current is the code valid now, or a *RefusedError (none, expired,
	// used, burned).
	Current() (Code, error)
	// Wrong records a wrong try and returns the tries left (0: burned).
	Wrong() int
	// Used marks the code used; it fails when another run used it first.
	Used() error
}

type m1 struct {
	V   int    `json:"v"`
	SID []byte `json:"sid"`
	YA  []byte `json:"ya"`
}

type m2 struct {
	YB []byte `json:"yb,omitempty"`
	*RefusedError
}

type m3 struct {
	Request json.RawMessage `json:"request"`
	Confirm []byte          `json:"confirm"`
}

type m4 struct {
	Grant   json.RawMessage `json:"grant,omitempty"`
	Confirm []byte          `json:"confirm,omitempty"`
	*RefusedError
}

// generator is CPace's password-derived generator: the code and the
// session id, hashed to a ristretto255 element (so no party knows its
// discrete log).
func generator(code Code, sid []byte) *ristretto255.Element {
	h := sha512.New()
	for _, part := range [][]byte{[]byte("strata-lend CPace ristretto255 v1"), []byte(code), sid} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return ristretto255.NewElement().FromUniformBytes(h.Sum(nil))
}

// share draws a secret scalar and returns it with its public share y*g.
func share(g *ristretto255.Element) (*ristretto255.Scalar, []byte, error) {
	var b [64]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, nil, err
	}
	y := ristretto255.NewScalar().FromUniformBytes(b[:])
	return y, ristretto255.NewElement().ScalarMult(y, g).Encode(nil), nil
}

// keys are the two confirmation keys of one run: from the shared element
// y_a*y_b*g and the transcript (sid, both shares). A wrong code on either
// side gives unrelated keys.
func keys(y *ristretto255.Scalar, peer []byte, sid, ya, yb []byte) (pc, lender []byte, err error) {
	p := ristretto255.NewElement()
	if len(peer) != 32 || p.Decode(peer) != nil || p.Equal(ristretto255.NewElement().Zero()) == 1 {
		return nil, nil, errors.New("the other side's share is not a valid element")
	}
	k := ristretto255.NewElement().ScalarMult(y, p)
	if k.Equal(ristretto255.NewElement().Zero()) == 1 {
		return nil, nil, errors.New("the shared element is the identity")
	}
	h := sha512.New()
	for _, part := range [][]byte{[]byte("strata-lend ISK v1"), sid, k.Encode(nil), ya, yb} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	isk := h.Sum(nil)
	return mac(isk, []byte("pc")), mac(isk, []byte("lender")), nil
}

func mac(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	_, err = w.Write(append(n[:], b...))
	return err
}

func readFrame(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return fmt.Errorf("a message of %d bytes (at most %d)", size, maxFrame)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func deadline(ctx context.Context, conn net.Conn) func() {
	d := time.Now().Add(ExchangeTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	conn.SetDeadline(d)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

// Pair runs this PC's half of the exchange on conn (a TCP connection to the
// lender's pairing port). It returns the grant only when the lender proved
// it knows the code; a *RefusedError when it said no; ErrImpostor when
// whoever answered did not know the code.
func Pair(ctx context.Context, conn net.Conn, code Code, req Request) (*Grant, error) {
	defer deadline(ctx, conn)()
	sid := make([]byte, 16)
	if _, err := rand.Read(sid); err != nil {
		return nil, err
	}
	ya, YA, err := share(generator(code, sid))
	if err != nil {
		return nil, err
	}
	if err := writeFrame(conn, m1{V: Version, SID: sid, YA: YA}); err != nil {
		return nil, fmt.Errorf("sending to the lender: %w", err)
	}
	var a m2
	if err := readFrame(conn, &a); err != nil {
		return nil, fmt.Errorf("the lender did not answer the pairing (%v): is it still lending?", err)
	}
	if a.RefusedError != nil {
		return nil, a.RefusedError
	}
	kPC, kLender, err := keys(ya, a.YB, sid, YA, a.YB)
	if err != nil {
		return nil, ErrImpostor
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if err := writeFrame(conn, m3{Request: body, Confirm: mac(kPC, YA, a.YB, body)}); err != nil {
		return nil, fmt.Errorf("sending to the lender: %w", err)
	}
	var b m4
	if err := readFrame(conn, &b); err != nil {
		return nil, fmt.Errorf("the lender did not finish the pairing (%v)", err)
	}
	if b.RefusedError != nil {
		return nil, b.RefusedError
	}
	if !hmac.Equal(b.Confirm, mac(kLender, YA, a.YB, body, b.Grant)) {
		return nil, ErrImpostor
	}
	var g Grant
	if err := json.Unmarshal(b.Grant, &g); err != nil {
		return nil, fmt.Errorf("the lender's grant is unreadable: %v", err)
	}
	return &g, nil
}

// Serve runs the lender's half on conn: it answers only a party that proves
// it holds book's code, counts every wrong try, and calls grant (the
// lender's work: the agent, the key) at most once per code.
func Serve(ctx context.Context, conn net.Conn, book Book, grant func(context.Context, Request) (*Grant, error)) error {
	defer deadline(ctx, conn)()
	var a m1
	if err := readFrame(conn, &a); err != nil {
		return fmt.Errorf("reading the first message: %w", err)
	}
	if a.V != Version || len(a.SID) < 16 || len(a.SID) > 64 {
		return writeFrame(conn, m2{RefusedError: &RefusedError{Kind: "version", Message: fmt.Sprintf("this lender speaks version %d of the pairing", Version)}})
	}
	code, err := book.Current()
	if err != nil {
		var r *RefusedError
		if !errors.As(err, &r) {
			r = &RefusedError{Kind: RefusedNone}
		}
		return errors.Join(writeFrame(conn, m2{RefusedError: r}), err)
	}
	yb, YB, err := share(generator(code, a.SID))
	if err != nil {
		return err
	}
	kPC, kLender, err := keys(yb, a.YA, a.SID, a.YA, YB)
	if err != nil {
		book.Wrong()
		return writeFrame(conn, m2{RefusedError: &RefusedError{Kind: "garbled", Message: err.Error()}})
	}
	if err := writeFrame(conn, m2{YB: YB}); err != nil {
		return err
	}
	var c m3
	if err := readFrame(conn, &c); err != nil {
		// Leaving after our share is no guess: the share alone tests nothing.
		return fmt.Errorf("reading the confirmation: %w", err)
	}
	if !hmac.Equal(c.Confirm, mac(kPC, a.YA, YB, c.Request)) {
		left := book.Wrong()
		kind := RefusedWrong
		if left == 0 {
			kind = RefusedBurned
		}
		return errors.Join(writeFrame(conn, m4{RefusedError: &RefusedError{Kind: kind, TriesLeft: left}}), errors.New("a wrong code"))
	}
	var req Request
	if err := json.Unmarshal(c.Request, &req); err != nil {
		return writeFrame(conn, m4{RefusedError: &RefusedError{Kind: RefusedFailed, Message: "the request is unreadable"}})
	}
	if err := book.Used(); err != nil {
		var r *RefusedError
		if !errors.As(err, &r) {
			r = &RefusedError{Kind: RefusedUsed}
		}
		return errors.Join(writeFrame(conn, m4{RefusedError: r}), err)
	}
	g, err := grant(ctx, req)
	if err != nil {
		return errors.Join(writeFrame(conn, m4{RefusedError: &RefusedError{Kind: RefusedFailed, Message: err.Error()}}), err)
	}
	body, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return writeFrame(conn, m4{Grant: body, Confirm: mac(kLender, a.YA, YB, c.Request, body)})
}

// MemBook is a Book in memory (tests; a lender whose code lives only in its
// process).
type MemBook struct {
	mu  sync.Mutex
	st  State
	Now func() time.Time
}

// NewMemBook holds code until valid has passed.
func NewMemBook(code Code, valid time.Duration) *MemBook {
	return &MemBook{st: State{Code: code, Expires: time.Now().Add(valid), TriesLeft: MaxTries}, Now: time.Now}
}

func (b *MemBook) Current() (Code, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Valid(b.Now())
}

func (b *MemBook) Wrong() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Wrong()
}

func (b *MemBook) Used() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Use(b.Now())
}

// State is a code's life: what a lender keeps (in memory or in its
// root-only state file) to answer Book's questions.
type State struct {
	Code      Code      `json:"code,omitempty"`
	Expires   time.Time `json:"expires"`
	TriesLeft int       `json:"tries_left"`
	Used      bool      `json:"used,omitempty"`
}

// Valid is the code if it may still pair at now, else why not.
func (s State) Valid(now time.Time) (Code, error) {
	switch {
	case s.Code == "" && s.Used:
		return "", &RefusedError{Kind: RefusedUsed}
	case s.Code == "" && s.TriesLeft <= 0 && !s.Expires.IsZero():
		return "", &RefusedError{Kind: RefusedBurned}
	case s.Code == "":
		return "", &RefusedError{Kind: RefusedNone}
	case s.Used:
		return "", &RefusedError{Kind: RefusedUsed}
	case s.TriesLeft <= 0:
		return "", &RefusedError{Kind: RefusedBurned}
	case !now.Before(s.Expires):
		return "", &RefusedError{Kind: RefusedExpired}
	}
	return s.Code, nil
}

// Wrong counts a wrong try; a burned code is forgotten. It returns the
// tries left.
func (s *State) Wrong() int {
	if s.TriesLeft > 0 {
		s.TriesLeft--
	}
	if s.TriesLeft == 0 {
		s.Code = ""
	}
	return s.TriesLeft
}

// Use marks the code used at now (and forgets it), if it is still valid.
func (s *State) Use(now time.Time) error {
	if _, err := s.Valid(now); err != nil {
		return err
	}
	s.Code, s.Used = "", true
	return nil
}
