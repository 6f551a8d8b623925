package probe

import (
	"context"

	"github.com/strata-companion/companion/internal/nvsmi"
)

// nvidia-smi is read by internal/nvsmi, the one reader the local probe, the
// second PC's probe and the agent share; callers name its kinds and queries
// there (nvsmi.Error, nvsmi.QueryArgs, ...). Here: its findings in the
// probe's terms (Finding, GPU with Vendor and Source).

// SMIFinding says what happened and what to do.
func SMIFinding(e *nvsmi.Error) Finding {
	sev, what, fix := e.Explain()
	return Finding{sev, what, fix}
}

// ParseNvidiaSMI reads nvidia-smi's CSV (nvsmi.Parse) as GPUs. It returns
// an error, a *nvsmi.Error, only when no GPU could be read.
func ParseNvidiaSMI(out []byte) ([]GPU, error) {
	gpus, _, err := ParseNvidiaSMIDetailed(out)
	return gpus, err
}

// ParseNvidiaSMIDetailed is ParseNvidiaSMI plus findings for lines that
// were skipped while other lines gave GPUs (a GPU that "is lost", garbage).
func ParseNvidiaSMIDetailed(out []byte) ([]GPU, []Finding, error) {
	ng, skipped, err := nvsmi.Parse(out)
	if err != nil {
		return nil, nil, err
	}
	return fromNvsmi(ng), skippedFindings(skipped), nil
}

func skippedFindings(lines []string) []Finding {
	var out []Finding
	for _, l := range lines {
		what, fix := nvsmi.SkippedLine(l)
		out = append(out, Finding{SeverityWarning, what, fix})
	}
	return out
}

func fromNvsmi(ng []nvsmi.GPU) []GPU {
	var out []GPU
	for _, g := range ng {
		out = append(out, GPU{GPU: g, Vendor: VendorNVIDIA, Source: SourceNvidiaSMI})
	}
	return out
}

// Runner runs nvidia-smi (see nvsmi.Runner).
type Runner = nvsmi.Runner

// QueryNvidia runs the rich query through run and, when the driver rejects
// its extra fields, the basic one, then asks which cards are split into MIG
// slices. It returns the GPUs, which query gave them (nvsmi.QueryRich,
// nvsmi.QueryBasic, or ""), and findings for what went wrong. where names the
// binary or host in messages. The second-PC probe calls it with an ssh
// runner, or one replaying what the agent ran.
func QueryNvidia(ctx context.Context, run Runner, where string) (gpus []GPU, query string, problems []Finding) {
	gpus, query, problems, _ = queryNvidia(ctx, run, where)
	return gpus, query, problems
}

// queryNvidia is QueryNvidia that also says how it failed ("" when it did not).
func queryNvidia(ctx context.Context, run Runner, where string) ([]GPU, string, []Finding, nvsmi.Kind) {
	res := nvsmi.Query(ctx, run, where, true)
	if res.Err != nil {
		return nil, "", []Finding{SMIFinding(res.Err)}, res.Err.Kind
	}
	var problems []Finding
	if res.FellBack != nil {
		problems = append(problems, SMIFinding(res.FellBack))
	}
	problems = append(problems, skippedFindings(res.Skipped)...)
	return fromNvsmi(res.GPUs), res.Query, problems, ""
}

// FormatNvidiaSMI writes GPUs back in the rich CSV form (tests, fakes).
func FormatNvidiaSMI(gpus []GPU) string {
	ng := make([]nvsmi.GPU, 0, len(gpus))
	for _, g := range gpus {
		ng = append(ng, g.GPU)
	}
	return nvsmi.Format(ng)
}
