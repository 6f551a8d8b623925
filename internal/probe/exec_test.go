//go:build !windows

package probe

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/nvsmi"
	"github.com/strata-companion/companion/internal/testenv"
)

// fakeSMI writes an executable nvidia-smi shell script into a fresh folder
// and puts that folder first on PATH. It stands in for the real one, which
// needs an NVIDIA GPU; it prints what real ones print.
func fakeSMI(t testing.TB, script string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "nvidia-smi")
	if err := testenv.WriteExecutable(path, []byte("#!/bin/sh\n"+script)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir, path
}

// printing returns a script body that prints out and exits with code,
// using shell builtins only (some tests empty PATH).
func printing(out string, code int) string {
	return "while IFS= read -r l; do printf '%s\\n' \"$l\"; done <<'EOF'\n" + out + "EOF\nexit " + strconv.Itoa(code) + "\n"
}

func testOptions(t testing.TB) Options {
	return Options{SearchPaths: []string{}, SysfsRoot: t.TempDir(), Timeout: 5 * time.Second}
}

func problemsText(r *Report) string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString(p.Severity + ": " + p.What + " / " + p.Fix + "\n")
	}
	return b.String()
}

func TestProbeFakeNvidiaSMITwoGPUs(t *testing.T) {
	_, path := fakeSMI(t, `case "$*" in
  "`+nvsmi.QueryArgs+`") ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
`+printing(smiTwo, 0))
	r := Probe(context.Background(), testOptions(t))
	if r.NvidiaSMI != path || r.NvidiaQuery != nvsmi.QueryRich {
		t.Errorf("binary %q query %q, want %q rich", r.NvidiaSMI, r.NvidiaQuery, path)
	}
	if len(r.GPUs) != 2 || r.GPUs[0].TotalMiB != 24564 || r.GPUs[1].TotalMiB != 12288 || r.GPUs[1].FreeMiB != 12006 {
		t.Fatalf("GPUs %+v\n%s", r.GPUs, problemsText(r))
	}
	for _, p := range r.Problems {
		if p.Severity == SeverityError {
			t.Errorf("unexpected problem: %+v", p)
		}
	}
	if r.CPU.Threads < 1 || r.RAM.TotalMiB <= 0 {
		t.Errorf("CPU %+v RAM %+v", r.CPU, r.RAM)
	}
}

func TestProbeFakeNvidiaSMIFailures(t *testing.T) {
	cases := []struct {
		name, script, want string
	}{
		{"driver does not answer", printing(smiDriver, 9), "could not talk to the NVIDIA driver"},
		{"garbage", printing("Segmentation fault\x01\x02 ###\n", 139), "cannot read"},
		{"prints nothing, fails", "exit 3\n", "printed nothing"},
		{"no devices", printing(smiNoDev, 6), "found no NVIDIA GPU"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fakeSMI(t, c.script)
			r := Probe(context.Background(), testOptions(t))
			if len(r.GPUs) != 0 {
				t.Fatalf("GPUs %+v", r.GPUs)
			}
			txt := problemsText(r)
			if !strings.Contains(txt, c.want) || !strings.Contains(txt, "error: ") {
				t.Errorf("problems do not say %q:\n%s", c.want, txt)
			}
		})
	}
}

func TestProbeFakeOldDriverFallsBack(t *testing.T) {
	fakeSMI(t, `case "$*" in
  *compute_cap*) echo 'Field "compute_cap" is not a valid field to query.'; echo; exit 2 ;;
esac
`+printing(smiBasic, 0))
	r := Probe(context.Background(), testOptions(t))
	if r.NvidiaQuery != nvsmi.QueryBasic || len(r.GPUs) != 1 || r.GPUs[0].Driver != "470.239.06" {
		t.Fatalf("query %q GPUs %+v\n%s", r.NvidiaQuery, r.GPUs, problemsText(r))
	}
	txt := problemsText(r)
	for _, want := range []string{"too old to report compute capability", "older than Strata supports", "driver 470.239.06 is too old"} {
		if !strings.Contains(txt, want) {
			t.Errorf("problems do not say %q:\n%s", want, txt)
		}
	}
}

func TestProbeNoNvidiaSMI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r := Probe(context.Background(), testOptions(t))
	if r.NvidiaSMI != "" || len(r.GPUs) != 0 || !strings.Contains(problemsText(r), "nvidia-smi was not found") {
		t.Fatalf("%+v\n%s", r, problemsText(r))
	}
	// The override names one file only; a missing one is "not found" too.
	o := testOptions(t)
	o.NvidiaSMIPath = filepath.Join(t.TempDir(), "nvidia-smi")
	if r := Probe(context.Background(), o); !strings.Contains(problemsText(r), "was not found (looked for "+o.NvidiaSMIPath) {
		t.Fatalf("%s", problemsText(r))
	}
}

func TestProbeSearchPathsAndUnrunnableBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad-nvidia-smi")
	os.WriteFile(bad, []byte("not a program"), 0o644) // not executable
	good := filepath.Join(dir, "nvidia-smi")
	testenv.WriteExecutable(good, []byte("#!/bin/sh\n"+printing(smiLaptop, 0)))
	o := testOptions(t)
	o.SearchPaths = []string{filepath.Join(dir, "missing"), bad, good}
	r := Probe(context.Background(), o)
	if r.NvidiaSMI != good || len(r.GPUs) != 1 {
		t.Fatalf("used %q, GPUs %+v\n%s", r.NvidiaSMI, r.GPUs, problemsText(r))
	}
	o.SearchPaths = []string{bad}
	r = Probe(context.Background(), o)
	if !strings.Contains(problemsText(r), "could not be started") {
		t.Fatalf("%s", problemsText(r))
	}
}

// A hung nvidia-smi (a driver in trouble) is stopped at the timeout, with
// everything it started.
func TestProbeHungNvidiaSMIIsKilled(t *testing.T) {
	dir, _ := fakeSMI(t, `sleep 300 &
echo $! > "$(dirname "$0")/child.pid"
echo $$ > "$(dirname "$0")/self.pid"
wait
`)
	o := testOptions(t)
	o.Timeout = 300 * time.Millisecond
	done := make(chan *Report, 1)
	go func() { done <- Probe(context.Background(), o) }()
	var r *Report
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Probe did not return: the timeout did not hold")
	}
	if !strings.Contains(problemsText(r), "did not answer in time") {
		t.Errorf("problems:\n%s", problemsText(r))
	}
	for _, f := range []string{"self.pid", "child.pid"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("the fake did not start: %v", err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		waitGone(t, pid)
	}
}

// waitGone waits until pid no longer runs (gone, or a zombie nobody reaped:
// PID 1 in a container may not reap).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after the timeout: %s", pid, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
