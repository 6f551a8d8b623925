package main

import (
	"github.com/strata-companion/companion/internal/relay"

	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/fakeencoder"
	"github.com/strata-companion/companion/internal/settings"
)

// TestNoArgumentsOrHelpExplains: with no arguments (a person ran it) the
// explanation goes to stderr and the exit code is 2; --help and -h ask for
// it: stdout, exit 0.
func TestNoArgumentsOrHelpExplains(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"-h"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		text, want := out.String(), 0
		if args == nil {
			text, want = errb.String(), 2
		}
		if code != want {
			t.Errorf("%v: exit %d, want %d", args, code, want)
		}
		if strings.HasPrefix(out.String(), "READY") {
			t.Errorf("%v: printed READY: %q", args, out.String())
		}
		for _, want := range []string{"Strata", "--mmproj", "ENC <image> <output>", "second PC", "STRATA_COMPANION_SETTINGS"} {
			if !strings.Contains(text, want) {
				t.Errorf("%v: the explanation lacks %q:\n%s", args, want, text)
			}
		}
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "strata") {
				t.Errorf("%v: a line starts with strata: %q", args, l)
			}
		}
	}
}

// TestStrataArgumentsNeverStopIt: Strata's arguments, known or not, never
// make the relay exit (Strata would not start, text included).
func TestStrataArgumentsNeverStopIt(t *testing.T) {
	for _, c := range []struct {
		args          []string
		extra, unknwn []string
	}{
		{[]string{"--mmproj", "m", "--model", "x", "--gpu", "--threads", "4", "--max-tokens", "1024"}, nil, nil},
		{[]string{"--mmproj", "m", "--model", "x", "--min-tokens", "64", "--flash-attn", "on", "--a-future-flag", "3"},
			[]string{"--min-tokens", "64", "--flash-attn", "on", "--a-future-flag", "3"}, []string{"--a-future-flag"}},
		{[]string{"--mmproj=m", "--model", "x", "--new-switch", "--other=v"}, []string{"--new-switch", "--other", "v"}, []string{"--new-switch", "--other"}},
	} {
		a, err := relay.ParseStrataArgs(c.args)
		if err != nil || a.Mmproj != "m" || a.Model != "x" || strings.Join(a.Extra, " ") != strings.Join(c.extra, " ") || strings.Join(a.Unknown, " ") != strings.Join(c.unknwn, " ") {
			t.Errorf("%q: %+v %v", c.args, a, err)
		}
	}
	if _, err := relay.ParseStrataArgs([]string{"--model", "x", "--threads"}); err == nil || !strings.Contains(err.Error(), "--mmproj") {
		t.Errorf("no --mmproj: %v", err)
	}
}

// runOnce starts the relay as Strata does, sends lines, and returns stdout
// and stderr.
func runOnce(t *testing.T, settingsFile, mmproj string, input string) (string, string) {
	t.Helper()
	t.Setenv(EnvSettings, settingsFile)
	t.Setenv("STRATA_COMPANION_HOME", t.TempDir()) // no service to report to
	var out, errb bytes.Buffer
	model := filepath.Join(t.TempDir(), "model.gguf")
	fakeencoder.WriteModel(model, 5)
	if code := run(context.Background(), []string{"--mmproj", mmproj, "--model", model}, strings.NewReader(input), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.HasPrefix(l, "strata") {
			t.Errorf("stderr line starts with strata (Strata would take it for the engine's last words): %q", l)
		}
	}
	return out.String(), errb.String()
}

func TestCorruptSettingsAreReportedAsSuch(t *testing.T) {
	dir := t.TempDir()
	sf := filepath.Join(dir, "settings.json")
	os.WriteFile(sf, []byte(`{"vision": "remote", "remote": {"host": `), 0o644)
	mmproj := filepath.Join(dir, "mmproj.gguf")
	fakeencoder.WriteMmproj(mmproj, 24)
	out, errs := runOnce(t, sf, mmproj, "ENC /x/a.img /x/a.sve\nQUIT\n")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != "READY 24" {
		t.Fatalf("stdout %q", out)
	}
	for _, s := range []string{lines[1], errs} {
		if !strings.Contains(s, sf) || !strings.Contains(s, "not valid JSON") || strings.Contains(s, "no second PC") {
			t.Errorf("the corrupt settings file is not named as the problem: %q", s)
		}
	}
}

func TestUnreadableMmprojWithNothingSavedSaysWhy(t *testing.T) {
	dir := t.TempDir()
	sf := filepath.Join(dir, "settings.json")
	(&settings.Settings{Vision: settings.PlacementOff}).Save(sf)
	missing := filepath.Join(dir, "no-such-mmproj.gguf")
	out, errs := runOnce(t, sf, missing, "ENC /x/a.img /x/a.sve\nQUIT\n")
	if !strings.HasPrefix(out, "READY 0\n") {
		t.Fatalf("Strata must still get READY: %q", out)
	}
	if !strings.Contains(out, "ERR pictures are switched off in Strata Companion") {
		t.Errorf("off: %q", out)
	}
	if !strings.Contains(errs, missing) || !strings.Contains(errs, "READY 0") {
		t.Errorf("stderr does not say the mmproj is unreadable: %q", errs)
	}
}
