package live_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/elevate"
	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/setupflow/live"
)

// Each action is one strata-service lend run with an administrator's
// rights (Start for this window's account); a declined prompt says so and
// what to do; the status is the lender's view for this account.
func TestLendingRunsLendElevated(t *testing.T) {
	var runs []string
	var answer error
	var shown *lendshown.Shown
	l := &live.Lending{Exe: "/opt/strata-companion/strata-service", User: "sam",
		Run: func(_ context.Context, exe string, args ...string) error {
			runs = append(runs, exe+" "+strings.Join(args, " "))
			return answer
		},
		Shown: func() (*lendshown.Shown, error) {
			if shown == nil {
				return nil, os.ErrNotExist
			}
			return shown, nil
		}}
	ctx := context.Background()
	if st := l.Status(); st.Lending {
		t.Errorf("lending with no view of it: %+v", st)
	}
	for _, f := range []func(context.Context) error{l.Start, l.NewCode, l.Stop} {
		if err := f(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"/opt/strata-companion/strata-service lend --user sam", "/opt/strata-companion/strata-service lend code", "/opt/strata-companion/strata-service lend stop"}
	if strings.Join(runs, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs:\n%s\nwant\n%s", strings.Join(runs, "\n"), strings.Join(want, "\n"))
	}
	answer = elevate.ErrDeclined
	if err := l.Start(ctx); !errors.Is(err, elevate.ErrDeclined) || !strings.Contains(err.Error(), "nothing was changed: try again and allow it") {
		t.Errorf("a declined prompt: %v", err)
	}
	exp := time.Now().Add(5 * time.Minute)
	shown = &lendshown.Shown{Name: "gaming-laptop", Code: "HXK4-9TQM", Expires: exp, Paired: []string{"strata-pc"}}
	if st := l.Status(); !st.Lending || st.Name != "gaming-laptop" || st.Code != "HXK4-9TQM" || !st.Expires.Equal(exp) || len(st.Paired) != 1 {
		t.Errorf("status %+v", st)
	}
}
