package secondpc

import (
	"context"
	"errors"
	"sync"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/settings"
)

// Recorder is the one way the second-PC code records what it did in the
// companion's settings. The backend (internal/backend, the settings' one
// owner) implements it in-process (the CLI with no service running);
// OwnerRecorder asks the settings' owner (the running service, or the
// in-process one: internal/owner.Open chooses); MemoryRecorder holds it
// until the wizard's Apply, which commits it through the owner.
type Recorder interface {
	// Paired is the second PC recorded now (nil: none).
	Paired(ctx context.Context) (*settings.Remote, error)
	// RecordPairing stores a second PC just paired (host, port, user, key
	// file, host key, OS, arch, MAC); MergePairing says how.
	RecordPairing(ctx context.Context, r settings.Remote) error
	// RecordPrepare stores what prepare found (folder, encoder, n_embd, OS,
	// arch); ApplyPrepare says how.
	RecordPrepare(ctx context.Context, res prepare.Result) error
	// RecordUnpair forgets the second PC.
	RecordUnpair(ctx context.Context) error
}

// MergePairing is the second PC after pairing n, given what was recorded
// before (old, may be nil): pairing the same PC again (host, port, user)
// keeps what prepare found and the user's idle-stop and wake choices; a
// MAC that could not be found this time keeps the one found before.
func MergePairing(old *settings.Remote, n settings.Remote) settings.Remote {
	if old == nil || old.Host != n.Host || old.Port != n.Port || old.User != n.User {
		return n
	}
	r := *old
	r.KeyFile, r.HostKey, r.OS, r.Arch = n.KeyFile, n.HostKey, n.OS, n.Arch
	if n.MAC != "" {
		r.MAC = n.MAC
	}
	return r
}

// ApplyPrepare records a prepare result into r.
func ApplyPrepare(r *settings.Remote, res prepare.Result) {
	r.RemoteDir, r.OS, r.Arch = res.RemoteDir, res.OS, res.Arch
	r.EncoderPath, r.NEmbd = res.EncoderPath, res.NEmbd
	r.GPUs, r.NoGPU, r.EncoderStartMS = prepare.RemoteGPUs(res.GPUs), res.NoGPU, res.StartMS
}

// Prepared is res on the wire (POST /v1/remote).
func Prepared(res prepare.Result) *controlapi.RemotePrepared {
	return &controlapi.RemotePrepared{OS: res.OS, Arch: res.Arch, RemoteDir: res.RemoteDir, EncoderPath: res.EncoderPath, NEmbd: res.NEmbd,
		GPUs: prepare.RemoteGPUs(res.GPUs), NoGPU: res.NoGPU, EncoderStartMS: res.StartMS}
}

// PrepareResultOf is the wire's record back as a prepare result.
func PrepareResultOf(p *controlapi.RemotePrepared) prepare.Result {
	res := prepare.Result{OS: p.OS, Arch: p.Arch, RemoteDir: p.RemoteDir, EncoderPath: p.EncoderPath, NEmbd: p.NEmbd,
		NoGPU: p.NoGPU, StartMS: p.EncoderStartMS}
	for _, g := range p.GPUs {
		res.GPUs = append(res.GPUs, framing.GPU{Index: g.Index, Name: g.Name, TotalMiB: g.TotalMiB})
	}
	return res
}

// ErrNotPaired says there is no second PC to record a prepare for.
var ErrNotPaired = errors.New("no second PC is paired; pair one first (strata-service remote pair [user@]host, or the setup wizard's second-PC page)")

// OwnerRecorder records through the settings' owner (controlapi.Owner: the
// running service's API, GET and POST /v1/remote, or the in-process owner
// when none runs): the backend merges each record into the settings under
// its lock, so it stays their only writer.
type OwnerRecorder struct{ Owner controlapi.Owner }

func (a OwnerRecorder) Paired(ctx context.Context) (*settings.Remote, error) {
	return a.Owner.Remote(ctx)
}

func (a OwnerRecorder) RecordPairing(ctx context.Context, r settings.Remote) error {
	return a.record(ctx, controlapi.RemoteRecord{Pairing: &r})
}

func (a OwnerRecorder) RecordPrepare(ctx context.Context, res prepare.Result) error {
	return a.record(ctx, controlapi.RemoteRecord{Prepare: Prepared(res)})
}

func (a OwnerRecorder) RecordUnpair(ctx context.Context) error {
	return a.record(ctx, controlapi.RemoteRecord{Unpair: true})
}

func (a OwnerRecorder) record(ctx context.Context, rec controlapi.RemoteRecord) error {
	_, err := a.Owner.RecordRemote(ctx, rec)
	return controlapi.Words(err)
}

// MemoryRecorder keeps the second PC in memory: the wizard pairs and
// prepares on its second-PC page and writes the result only at Apply.
type MemoryRecorder struct {
	mu     sync.Mutex
	remote *settings.Remote
}

// NewMemoryRecorder starts from r (nil: nothing paired).
func NewMemoryRecorder(r *settings.Remote) *MemoryRecorder {
	m := &MemoryRecorder{}
	if r != nil {
		c := *r
		m.remote = &c
	}
	return m
}

// Remote is a copy of what is recorded (nil: none).
func (m *MemoryRecorder) Remote() *settings.Remote {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.remote == nil {
		return nil
	}
	c := *m.remote
	return &c
}

func (m *MemoryRecorder) Paired(context.Context) (*settings.Remote, error) { return m.Remote(), nil }

func (m *MemoryRecorder) RecordPairing(_ context.Context, r settings.Remote) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := MergePairing(m.remote, r)
	m.remote = &n
	return nil
}

func (m *MemoryRecorder) RecordPrepare(_ context.Context, res prepare.Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.remote == nil {
		return ErrNotPaired
	}
	ApplyPrepare(m.remote, res)
	return nil
}

func (m *MemoryRecorder) RecordUnpair(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.remote = nil
	return nil
}
