package nvsmi

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// Runner runs nvidia-smi with args and returns everything it printed (stdout
// and stderr together: errors come on either). err is the run's failure (an
// exit status; a timeout: wrap context.DeadlineExceeded; a missing program:
// wrap ErrNotFound; one that would not start: wrap ErrStart; a query the
// runner has no answer for: wrap ErrNotRun). Output that holds GPUs wins
// over err: a non-zero exit with good lines keeps them.
type Runner func(ctx context.Context, args []string) (out []byte, err error)

// Sentinels a Runner may wrap.
var (
	ErrNotFound = errors.New("not found")
	ErrStart    = errors.New("could not be started")
	// ErrNotRun: this runner has no answer for the query (a recording
	// made by an older agent); Query goes on as if it had not been asked.
	ErrNotRun = errors.New("not run")
)

// Result is what Query learned.
type Result struct {
	GPUs []GPU
	// Query is QueryRich or QueryBasic (the one that gave the GPUs), "" when none did.
	Query string
	// Skipped are lines that were not GPUs among lines that were.
	Skipped []string
	// FellBack is the rich query's refusal when the basic one was used.
	FellBack *Error
	// Err is why no GPU was read (nil when some were).
	Err *Error
}

// Query runs the rich query through run and, when the driver rejects its
// extra fields, the basic one; with mig, it then asks which cards are split
// into MIG slices (a driver that does not say leaves them MIGUnknown).
// where names the binary or host in errors.
func Query(ctx context.Context, run Runner, where string, mig bool) Result {
	var res Result
	gpus, skipped, err := queryOnce(ctx, run, QueryArgs)
	switch {
	case err == nil:
		res.GPUs, res.Query, res.Skipped = gpus, QueryRich, skipped
	case err.Kind == UnknownField:
		err.Where = where
		res.FellBack = err
		if gpus, skipped, err = queryOnce(ctx, run, BasicQueryArgs); err == nil {
			res.GPUs, res.Query, res.Skipped = gpus, QueryBasic, skipped
		}
	}
	if err != nil {
		err.Where = where
		res.Err = err
		return res
	}
	if mig {
		// Its failure says nothing new (the GPU query just answered):
		// the cards stay MIGUnknown.
		out, _ := run(ctx, strings.Fields(MIGQueryArgs))
		modes := ParseMIG(out)
		for i := range res.GPUs {
			res.GPUs[i].MIG = modes[res.GPUs[i].Index]
		}
	}
	return res
}

func queryOnce(ctx context.Context, run Runner, args string) ([]GPU, []string, *Error) {
	out, runErr := run(ctx, strings.Fields(args))
	gpus, skipped, err := Parse(out)
	if err == nil {
		return gpus, skipped, nil
	}
	var se *Error
	errors.As(err, &se)
	if runErr != nil {
		switch {
		case errors.Is(runErr, ErrNotRun):
			return nil, nil, &Error{Kind: UnknownField, Detail: runErr.Error()}
		case errors.Is(runErr, context.Canceled):
			return nil, nil, &Error{Kind: RunnerFailure, Detail: runErr.Error()}
		case errors.Is(runErr, context.DeadlineExceeded):
			return nil, nil, &Error{Kind: Timeout, Detail: runErr.Error()}
		case errors.Is(runErr, ErrNotFound):
			return nil, nil, &Error{Kind: NotFound}
		case errors.Is(runErr, ErrStart):
			return nil, nil, &Error{Kind: StartFailed, Detail: runErr.Error()}
		}
		if se.Kind == Empty {
			// Nothing printed: the run's own error is the best we have.
			se.Detail = runErr.Error()
		}
	}
	return nil, nil, se
}

func itoa(i int) string { return strconv.Itoa(i) }
