package nvsmi

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// answers is a Runner that answers each query from a table (a missing
// query: ErrNotRun, as a recording of an older agent).
func answers(tab map[string]string, errs map[string]error) (Runner, *[]string) {
	var calls []string
	return func(_ context.Context, args []string) ([]byte, error) {
		a := strings.Join(args, " ")
		calls = append(calls, a)
		out, ok := tab[a]
		if !ok {
			return nil, fmt.Errorf("nothing recorded: %w", ErrNotRun)
		}
		return []byte(out), errs[a]
	}, &calls
}

func TestQuery(t *testing.T) {
	exit := &exec.ExitError{}
	cases := []struct {
		name    string
		tab     map[string]string
		errs    map[string]error
		query   string
		gpus    int
		mig     []string
		skipped int
		err     Kind
		calls   int
	}{
		{"rich, MIG on one card", map[string]string{QueryArgs: twoCards, MIGQueryArgs: "0, Disabled\n1, Enabled\n"}, nil,
			QueryRich, 2, []string{MIGDisabled, MIGEnabled}, 0, "", 2},
		{"old driver: basic, MIG refused", map[string]string{QueryArgs: oldDriver, BasicQueryArgs: basicSix, MIGQueryArgs: "Field \"mig.mode.current\" is not a valid field to query.\n"},
			map[string]error{QueryArgs: exit, MIGQueryArgs: exit}, QueryBasic, 1, []string{MIGUnknown}, 0, "", 3},
		{"an older agent's recording without the MIG query", map[string]string{QueryArgs: twoCards}, nil, QueryRich, 2, []string{MIGUnknown, MIGUnknown}, 0, "", 2},
		{"non-zero exit with a lost card and a good one keeps the good one", map[string]string{QueryArgs: lostAmongGood, MIGQueryArgs: "0, [N/A]\n"},
			map[string]error{QueryArgs: exit}, QueryRich, 1, []string{MIGDisabled}, 1, "", 2},
		{"non-zero exit, driver down", map[string]string{QueryArgs: driverDown}, map[string]error{QueryArgs: exit}, "", 0, nil, 0, Driver, 1},
		{"non-zero exit, nothing printed", map[string]string{QueryArgs: ""}, map[string]error{QueryArgs: errors.New("exit status 9")}, "", 0, nil, 0, Empty, 1},
		{"garbled", map[string]string{QueryArgs: "<html>502 Bad Gateway</html>\n"}, nil, "", 0, nil, 0, Garbage, 1},
		{"timeout", map[string]string{QueryArgs: "0, half a li"}, map[string]error{QueryArgs: timeoutError{}}, "", 0, nil, 0, Timeout, 1},
		{"missing", map[string]string{QueryArgs: ""}, map[string]error{QueryArgs: ErrNotFound}, "", 0, nil, 0, NotFound, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, calls := answers(c.tab, c.errs)
			res := Query(context.Background(), run, "there", true)
			if len(*calls) != c.calls {
				t.Errorf("calls %q", *calls)
			}
			if c.err != "" {
				if res.Err == nil || res.Err.Kind != c.err || len(res.GPUs) != 0 || res.Err.Where != "there" {
					t.Fatalf("result %+v, want error %s", res, c.err)
				}
				return
			}
			if res.Err != nil || res.Query != c.query || len(res.GPUs) != c.gpus || len(res.Skipped) != c.skipped {
				t.Fatalf("result %+v", res)
			}
			for i, m := range c.mig {
				if res.GPUs[i].MIG != m {
					t.Errorf("GPU %d MIG %q, want %q", i, res.GPUs[i].MIG, m)
				}
			}
			if (c.query == QueryBasic) != (res.FellBack != nil) {
				t.Errorf("fell back: %v", res.FellBack)
			}
		})
	}
}

func TestQueryWithoutMIG(t *testing.T) {
	run, calls := answers(map[string]string{QueryArgs: twoCards}, nil)
	if res := Query(context.Background(), run, "", false); len(res.GPUs) != 2 || len(*calls) != 1 {
		t.Fatalf("%+v %q", res, *calls)
	}
}
