package probe

import (
	"context"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/nvsmi"
)

type nvidiaResult struct {
	path     string
	query    string
	gpus     []GPU
	problems []Finding
}

// probeNvidia finds nvidia-smi and asks it. The first candidate that starts
// is the one used: a second try after a hung or failing driver would only
// double the wait and say the same thing.
func probeNvidia(ctx context.Context, o Options) nvidiaResult {
	cands := nvidiaSMICandidates(o)
	if len(cands) == 0 {
		where := "looked on PATH"
		if len(o.SearchPaths) > 0 {
			where += " and in " + strings.Join(o.SearchPaths, ", ")
		}
		if o.NvidiaSMIPath != "" {
			where = "looked for " + o.NvidiaSMIPath
		}
		return nvidiaResult{problems: []Finding{SMIFinding(&nvsmi.Error{Kind: nvsmi.NotFound, Where: where})}}
	}
	var res nvidiaResult
	for _, path := range cands {
		res = nvidiaResult{path: path}
		var kind nvsmi.Kind
		res.gpus, res.query, res.problems, kind = queryNvidia(ctx, LocalRunner(path, o.Timeout), path)
		if kind != nvsmi.StartFailed {
			break
		}
	}
	return res
}

// NvidiaSMICandidates lists the nvidia-smi binaries Probe would try, in
// order (o's zero fields take their defaults).
func NvidiaSMICandidates(o Options) []string { return nvidiaSMICandidates(o.withDefaults()) }

// nvidiaSMICandidates lists the nvidia-smi binaries to try, in order: the
// override alone, else PATH, then the drivers' usual places.
func nvidiaSMICandidates(o Options) []string {
	return nvsmi.Candidates(o.NvidiaSMIPath, o.LookPath, o.SearchPaths)
}

// DefaultNvidiaSMIPaths are where drivers put nvidia-smi off PATH (nvsmi.DefaultPaths).
func DefaultNvidiaSMIPaths() []string { return nvsmi.DefaultPaths() }

// LocalRunner runs the nvidia-smi at path, killing it and everything it
// started when timeout passes (or ctx ends); the caller is never held much
// past timeout (nvsmi.Local).
func LocalRunner(path string, timeout time.Duration) Runner { return nvsmi.Local(path, timeout) }
