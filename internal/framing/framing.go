// Package framing is the binary protocol between the relay (on the Strata
// server's PC) and its agent (on the second PC), spoken over the stdin/stdout
// of one ssh session. Each frame is a 1-byte type, a 4-byte big-endian
// payload length and the payload: pictures and results travel as raw bytes
// (no base64, no shell quoting), and one session carries any number of
// pictures (no process start per picture).
package framing

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Type says what a frame carries.
type Type byte

// Frame types. Relay -> agent: Encode, AskStatus, Wake, PutBegin, PutData,
// PutEnd, Stat, Ping. Agent -> relay: Hello, Result, Error, Event,
// StatusReply, PutReply, StatReply, Pong.
const (
	Hello       Type = 'H' // JSON Info, the agent's first frame
	Encode      Type = 'E' // uint32 id + picture bytes
	Result      Type = 'R' // uint32 id + uint16 line length + encoder's "OK ..." line + .sve bytes
	Error       Type = 'X' // uint32 id + a message for a person (id 0: not about a picture)
	Event       Type = 'V' // JSON AgentEvent (encoder woke, idle stop, failed)
	AskStatus   Type = 'S' // empty: ask for StatusReply
	StatusReply Type = 's' // JSON StatusInfo
	Wake        Type = 'W' // empty: start the encoder now; answered by StatusReply
	PutBegin    Type = 'P' // JSON PutHeader: receive a file into the agent's folder
	PutData     Type = 'D' // raw file bytes
	PutEnd      Type = 'F' // empty: the file is complete; answered by PutReply
	PutReply    Type = 'p' // JSON FileInfo (or Error)
	Stat        Type = 'T' // JSON {"name": ...}: size and sha256 of a file (and of its partial upload)
	StatReply   Type = 't' // JSON FileInfo
	Ping        Type = 'I' // any payload, echoed by Pong
	Pong        Type = 'O'
	// A picture streamed from its file in chunks (bounded memory on both
	// sides): PictureBegin, any number of PictureData, PictureEnd. Encode
	// (the whole picture in one frame) is still understood by the agent.
	PictureBegin Type = 'B' // uint32 id
	PictureData  Type = 'C' // raw picture bytes (at most ChunkSize)
	PictureEnd   Type = 'Z' // uint32 id + 1 byte: PictureComplete or PictureAborted
	// Beat: the agent is working (JSON Beat), sent every Info.BeatMS while
	// it starts its encoder or reads a picture, so the relay tells a busy
	// agent from a stopped or frozen one within seconds (the values and
	// why: internal/framing/bounds, Beat and HungAgent).
	Beat Type = 'K'
)

// Beat phases.
const (
	PhaseStarting = "starting" // the encoder starts (a GPU warms up)
	PhaseEncoding = "encoding" // the encoder reads the picture
	// PhaseReceiving: the picture streams in (a slow link may take seconds
	// to drain what the relay already wrote); it proves the agent and its
	// link alive and changes no bound.
	PhaseReceiving = "receiving"
)

// BeatInfo is a Beat's payload: the picture (0: none) and what is done now.
type BeatInfo struct {
	ID    uint32 `json:"id"`
	Phase string `json:"phase"`
}

// Where says where an encoder really reads pictures, as it said itself in
// its start line ("strata-vision: warmed up at N image tokens" on a GPU,
// "strata-vision: on the CPU, N threads, no warm-up"), with what nvidia-smi
// showed around its start.
type Where struct {
	Device string `json:"device"`        // "gpu" or "cpu"
	GPU    string `json:"gpu,omitempty"` // the GPU's name ("" when nvidia-smi did not name it)
	// GPUIndex is the card the encoder runs on, by nvidia-smi index (PCI
	// bus order, which the agent makes CUDA use too): the chosen
	// cuda_device, else 0. Always written on a GPU, 0 included (an older
	// agent left 0 out; it still reads as 0).
	GPUIndex int `json:"gpu_index"`
	// VRAMMiB is what the encoder took there (nvidia-smi's used memory on
	// that card after its start less before), when VRAMKnown: nvidia-smi
	// answered both times with a figure ("[N/A]" on vGPUs and some
	// laptops, or no answer in time, leaves it unknown). Read it with VRAM.
	VRAMMiB   int  `json:"vram_mib"`
	VRAMKnown bool `json:"vram_known"`
	// MIG says the card is split into MIG slices: the encoder got one slice.
	MIG     bool `json:"mig,omitempty"`
	Threads int  `json:"threads,omitempty"` // CPU threads
	Tokens  int  `json:"tokens,omitempty"`  // image tokens of the warm-up
	// Expected is the device it was started for ("gpu": with --gpu);
	// Reason says why it runs elsewhere (the encoder's own words).
	Expected string `json:"expected,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// VRAM is the VRAM the encoder took and whether it is known. An older
// agent wrote no vram_known: its figure counts as known when it is not 0
// (it left out both 0 and unknown).
func (w *Where) VRAM() (mib int, known bool) {
	if w == nil {
		return 0, false
	}
	return w.VRAMMiB, w.VRAMKnown || w.VRAMMiB != 0
}

// VRAMWords says what the encoder took on its GPU: "1383 MiB of VRAM",
// "VRAM taken not known" (nvidia-smi gave no figure), and ", one MIG
// slice" on a MIG-partitioned card.
func (w *Where) VRAMWords() string {
	s := "VRAM taken not known"
	if v, ok := w.VRAM(); ok {
		s = strconv.Itoa(v) + " MiB of VRAM"
	}
	if w != nil && w.MIG {
		s += ", one MIG slice"
	}
	return s
}

// Degraded says the encoder runs on the CPU although a GPU was asked for.
func (w *Where) Degraded() bool { return w != nil && w.Expected == "gpu" && w.Device != "gpu" }

// PictureEnd's last byte.
const (
	PictureComplete byte = 0 // read it
	PictureAborted  byte = 1 // drop it: the relay refused it (it already told Strata why)
)

// ChunkSize is the payload of one PictureData frame: large enough that the
// per-frame cost (one write, one 5-byte header) is noise, small enough that
// neither side holds much of a picture in memory.
const ChunkSize = 256 << 10

// HeaderSize is a frame header's length (type + big-endian uint32 length).
const HeaderSize = 5

// Version is the protocol version the agent announces in Hello.
const Version = 1

// MaxPicture is the largest picture the relay sends (Strata's pictures are
// 0.1-0.4 MB; 32 MiB leaves room for a huge PNG).
const MaxPicture = 32 << 20

// MaxPayload bounds any frame: a picture, or a .sve (1024 tokens x n_embd
// 2560 x 4 bytes = 10 MB; 64 MiB leaves room for 4096 tokens at n_embd 4096).
const MaxPayload = 64 << 20

// ErrTooLarge is returned for a frame whose announced length exceeds the bound.
var ErrTooLarge = errors.New("frame larger than the protocol allows")

// Writer writes frames; safe for concurrent use (the agent's encoder loop and
// its event reports share one stream).
type Writer struct {
	mu sync.Mutex
	w  io.Writer
	hd [5]byte
}

// NewWriter writes frames to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write sends one frame whose payload is the concatenation of parts (so a
// header and a large body go out without copying them together).
func (fw *Writer) Write(t Type, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > MaxPayload {
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, n)
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.hd[0] = byte(t)
	binary.BigEndian.PutUint32(fw.hd[1:], uint32(n))
	if _, err := fw.w.Write(fw.hd[:]); err != nil {
		return err
	}
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		if _, err := fw.w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// WriteFramed sends one frame whose payload is buf[HeaderSize:]; the first
// HeaderSize bytes of buf are overwritten with the header, so the frame goes
// out in one write (one ssh packet run, no copy).
func (fw *Writer) WriteFramed(t Type, buf []byte) error {
	if len(buf) < HeaderSize {
		return errors.New("framing: buffer shorter than a header")
	}
	n := len(buf) - HeaderSize
	if n > MaxPayload {
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, n)
	}
	buf[0] = byte(t)
	binary.BigEndian.PutUint32(buf[1:HeaderSize], uint32(n))
	fw.mu.Lock()
	defer fw.mu.Unlock()
	_, err := fw.w.Write(buf)
	return err
}

// WriteStream sends a frame whose payload is head followed by n bytes read
// from r (a .sve straight from its file: no 10 MB buffer). If r yields fewer
// than n bytes the stream is broken and the error says so; the caller must
// then end the session.
func (fw *Writer) WriteStream(t Type, head []byte, r io.Reader, n int64) error {
	total := int64(len(head)) + n
	if total > MaxPayload {
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, total)
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.hd[0] = byte(t)
	binary.BigEndian.PutUint32(fw.hd[1:], uint32(total))
	if _, err := fw.w.Write(fw.hd[:]); err != nil {
		return err
	}
	if _, err := fw.w.Write(head); err != nil {
		return err
	}
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	// CopyBuffer through plainWriter: one large buffer, no ReadFrom detour
	// through a 32 KiB generic copy.
	c, err := io.CopyBuffer(plainWriter{fw.w}, io.LimitReader(plainReader{r}, n), *buf)
	if err == nil && c < n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("frame body cut short: %w", err)
	}
	return nil
}

// CopyBufSize is the buffer Copy and WriteStream move bytes with.
const CopyBufSize = 1 << 20

var copyBufs = sync.Pool{New: func() any { b := make([]byte, CopyBufSize); return &b }}

// plainWriter hides a writer's ReadFrom so io.CopyBuffer uses our buffer.
type plainWriter struct{ w io.Writer }

func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

// Copy copies r to w through a pooled 1 MiB buffer that it fills before
// each write: an ssh channel hands over one 32 KiB packet per read, and
// writing each on its own would cost ~320 write syscalls per 10 MB .sve
// instead of ~10. It returns the bytes copied and the first error (a read
// error is returned as such, a write error too: the caller tells them apart
// by type, as with io.Copy).
func Copy(w io.Writer, r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var total int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
			if m < n {
				return total, io.ErrShortWrite
			}
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return total, nil
		default:
			return total, rerr
		}
	}
}

// plainReader hides a reader's WriteTo (an *os.File's would copy through
// its own 32 KiB buffer).
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// WriteJSON sends v as a JSON payload.
func (fw *Writer) WriteJSON(t Type, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return fw.Write(t, b)
}

// Reader reads frames.
type Reader struct {
	r   *bufio.Reader
	max int
}

// NewReader reads frames from r, refusing payloads over MaxPayload.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: MaxPayload}
}

// NextHeader reads the next frame's type and payload length; the payload
// follows and must be read whole through Body before the next call.
func (fr *Reader) NextHeader() (Type, int, error) {
	var hd [5]byte
	if _, err := io.ReadFull(fr.r, hd[:]); err != nil {
		return 0, 0, err
	}
	n := binary.BigEndian.Uint32(hd[1:])
	if int64(n) > int64(fr.max) {
		return 0, 0, fmt.Errorf("%w: type %q announces %d bytes", ErrTooLarge, hd[0], n)
	}
	return Type(hd[0]), int(n), nil
}

// Body reads n bytes of the current payload.
func (fr *Reader) Body(n int) io.Reader { return io.LimitReader(fr.r, int64(n)) }

// Next returns the next frame. The payload is freshly allocated (the caller
// may keep it). io.EOF means the stream ended cleanly between frames;
// io.ErrUnexpectedEOF that it ended inside one.
func (fr *Reader) Next() (Type, []byte, error) {
	t, n, err := fr.NextHeader()
	if err != nil {
		return 0, nil, err
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return t, p, nil
}

// Info is the agent's Hello.
type Info struct {
	Proto   int    `json:"proto"`
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	PID     int    `json:"pid"`
	// SelfSHA256 is the sha256 of the agent's own executable: prepare
	// compares it with the build it would upload.
	SelfSHA256 string `json:"self_sha256,omitempty"`
	// Dir is the agent's folder (where Put files land).
	Dir string `json:"dir"`
	// NEmbd from the second PC's mmproj metadata (0 if unknown).
	NEmbd int `json:"n_embd,omitempty"`
	// BeatMS: the agent sends Beat frames this often while it works
	// (bounds.Beat; 0: an older agent that sends none; the relay then does
	// not expect them, and only a lost link ends its silence).
	BeatMS int `json:"beat_ms,omitempty"`
}

// StatusInfo is the agent's state, answered to Status and Wake.
type StatusInfo struct {
	Encoder  string `json:"encoder"` // stopped, starting, running, failed
	PID      int    `json:"pid,omitempty"`
	NEmbd    int    `json:"n_embd,omitempty"`
	Pictures int    `json:"pictures"`
	Error    string `json:"error,omitempty"`
	// IdleStopS is the idle time after which the encoder is stopped (0: never).
	IdleStopS int   `json:"idle_stop_s"`
	GPUs      []GPU `json:"gpus,omitempty"`
	// GPUProblem says, in words, why GPUs is empty or stale when nvidia-smi
	// failed or did not answer in time ("" when it answered).
	GPUProblem string `json:"gpu_problem,omitempty"`
	// Where the running encoder reads pictures (nil: none runs).
	Where *Where `json:"where,omitempty"`
	// ScratchFiles counts files in the private scratch folder (0 between pictures).
	ScratchFiles int `json:"scratch_files"`
}

// GPU is one line of nvidia-smi on the second PC, as the agent sends it.
// It stays a type of its own, not nvsmi.GPU, because it is a wire format
// between agent and relay versions that are updated separately: its JSON
// keys are fixed, an unknown figure travels as 0 named in Unknown (older
// agents wrote 0 and no Unknown), and MIG is a flag. The agent writes it
// from nvsmi.GPU (the one record nvidia-smi's reader makes).
type GPU struct {
	Index    int    `json:"index"`
	Name     string `json:"name"`
	TotalMiB int    `json:"total_mib"`
	UsedMiB  int    `json:"used_mib"`
	FreeMiB  int    `json:"free_mib"`
	Driver   string `json:"driver,omitempty"`
	// Unknown names the memory figures nvidia-smi did not know ("total_mib",
	// "used_mib", "free_mib": it said "[N/A]" or "[Not Supported]", as on
	// vGPUs and MIG cards); they read 0. An older agent wrote none (and 0
	// for an unknown figure). Read them with Known.
	Unknown []string `json:"unknown,omitempty"`
	// MIG says the card is split into MIG slices: a program gets one
	// slice, not TotalMiB.
	MIG bool `json:"mig,omitempty"`
}

// The memory figures' names, as GPU.Unknown lists them.
const (
	GPUTotal = "total_mib"
	GPUUsed  = "used_mib"
	GPUFree  = "free_mib"
)

// MemWords says the card's memory: "4727 MiB free of 6144 MiB", with
// "not known" for a figure nvidia-smi did not give, and a MIG note.
func (g GPU) MemWords() string {
	fig := func(name string, v int) string {
		if !g.Known(name) {
			return "not known"
		}
		return strconv.Itoa(v) + " MiB"
	}
	s := fig(GPUFree, g.FreeMiB) + " free of " + fig(GPUTotal, g.TotalMiB)
	if g.MIG {
		s += " (split into MIG slices: a program gets one slice)"
	}
	return s
}

// Known says whether the memory figure named (GPUTotal, GPUUsed, GPUFree)
// is a figure nvidia-smi gave.
func (g GPU) Known(figure string) bool {
	for _, u := range g.Unknown {
		if u == figure {
			return false
		}
	}
	return true
}

// AgentEvent reports something the agent did on its own.
type AgentEvent struct {
	Kind    string `json:"kind"` // woke, idle_stopped, failed, stopped
	StartMS int64  `json:"start_ms,omitempty"`
	IdleS   int    `json:"idle_s,omitempty"`
	NEmbd   int    `json:"n_embd,omitempty"`
	Message string `json:"message,omitempty"`
	// Where the started encoder reads pictures (started, woke).
	Where *Where `json:"where,omitempty"`
}

// PutHeader starts a file upload. Name is a plain file name (no folders);
// Offset is where this upload resumes (the size of the partial file the
// agent reported by Stat).
type PutHeader struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Offset int64  `json:"offset"`
	Mode   uint32 `json:"mode,omitempty"`
}

// FileInfo describes a file in the agent's folder.
type FileInfo struct {
	Name        string `json:"name"`
	Exists      bool   `json:"exists"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256,omitempty"`
	PartialSize int64  `json:"partial_size,omitempty"`
	Path        string `json:"path,omitempty"`
}

// PutID packs a picture id in front of a payload.
func PutID(id uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], id)
	return b[:]
}

// SplitID reads the picture id in front of a payload.
func SplitID(p []byte) (uint32, []byte, error) {
	if len(p) < 4 {
		return 0, nil, errors.New("frame too short for an id")
	}
	return binary.BigEndian.Uint32(p), p[4:], nil
}

// ResultHeader builds the part of a Result frame before the .sve bytes.
func ResultHeader(id uint32, line string) []byte {
	b := make([]byte, 6+len(line))
	binary.BigEndian.PutUint32(b, id)
	binary.BigEndian.PutUint16(b[4:], uint16(len(line)))
	copy(b[6:], line)
	return b
}

// SplitResult reads a Result payload.
func SplitResult(p []byte) (id uint32, line string, sve []byte, err error) {
	if len(p) < 6 {
		return 0, "", nil, errors.New("result frame too short")
	}
	id = binary.BigEndian.Uint32(p)
	n := int(binary.BigEndian.Uint16(p[4:]))
	if len(p) < 6+n {
		return 0, "", nil, errors.New("result frame shorter than its line")
	}
	return id, string(p[6 : 6+n]), p[6+n:], nil
}
