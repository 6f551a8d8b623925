package live

import (
	"context"
	"time"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/pairing"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/secondpc"
	"github.com/strata-companion/companion/internal/settings"
	"github.com/strata-companion/companion/internal/setupflow"
	"github.com/strata-companion/companion/internal/strataconfig"
)

// FindWait is how long Find listens for lenders (remote find's default).
const FindWait = 3 * time.Second

// Find lists the PCs on this network that lend their GPU: lend.Browse for
// FindWait (r.Browse in tests: a test never sends multicast on this
// machine's own network).
func (r *Remote) Find(ctx context.Context) ([]lend.Announcement, error) {
	browse := r.Browse
	if browse == nil {
		browse = lend.Browse
	}
	return browse(ctx, FindWait)
}

// PairWithCode pairs with a lender by its code (pairing.PairWithCode, as
// remote pair --code): the companion's key, the host-key pin, and the
// second PC recorded in memory until Apply, as Pair records it.
func (r *Remote) PairWithCode(ctx context.Context, p setupflow.CodePairing, progress func(setupflow.Progress)) (*settings.Remote, error) {
	// This PC's encoder build may be installed there through the agent's
	// gate, as remote pair --code allows it.
	var allow []string
	if p.StrataRoot != "" {
		if enc := secondpc.LocalEncoder(&strataconfig.Config{Root: p.StrataRoot}); enc != "" {
			allow, _ = prepare.InstallSums(enc)
		}
	}
	rec := secondpc.NewMemoryRecorder(nil)
	step := 0.0
	_, err := pairing.PairWithCode(ctx, pairing.CodeOptions{Code: p.Code, Targets: []pairing.CodeTarget{p.Target},
		KeyFile: r.KeyFile, KnownHosts: r.knownHosts(), Recorder: rec, Allow: allow, Timeout: r.CodeTimeout,
		Progress: func(s string) {
			step = min(step+0.2, 0.9)
			progress(setupflow.Progress{Step: "pair", Fraction: step, Text: upperFirst(s)})
		}})
	if err != nil {
		return nil, err
	}
	progress(setupflow.Progress{Step: "pair", Fraction: 1, Text: "Paired"})
	return rec.Remote(), nil
}
