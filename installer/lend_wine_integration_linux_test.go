package installer

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/lendshown"
	"github.com/strata-companion/companion/internal/testenv"
)

// The lend role installed and uninstalled under wine, silently, with a
// stand-in strata-service.exe (the real lend would set up an ssh server and
// announce this machine on its own network): exactly its four files, no
// Strata service and no tray or setup, `strata-service lend` run once and
// its code read back (exit code 0, not 4), the role remembered, the New
// pairing code entry marked to run as administrator; the uninstaller runs
// `lend stop` and removes everything. About a minute (the prefix).
func TestLendRoleUnderWine(t *testing.T) {
	if testing.Short() {
		t.Skip("packs an installer and runs it under wine")
	}
	testenv.LookPath(t, "bash", "makensis")
	w := testenv.WineFor(t, nil)

	// An installer of stand-ins: strata-service.exe is the one that plays
	// lend; the others are never run in this role.
	dist := t.TempDir()
	bin := filepath.Join(dist, "windows-amd64")
	standin := w.Build(t, "github.com/strata-companion/companion/installer/internal/lendstandin")
	for name := range programs {
		testenv.Copy(t, standin, filepath.Join(bin, name), 0o755)
	}
	for a := range agents {
		p := filepath.Join(bin, filepath.FromSlash(strings.ReplaceAll(a, `\`, "/")))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("a Linux agent stand-in\n"), 0o755)
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "STRATA_SIGN_") && !strings.HasPrefix(e, "VERSION=") {
			env = append(env, e)
		}
	}
	pack := exec.Command("bash", "build.sh", "--skip-build")
	pack.Env = append(env, "DIST="+dist, "STRATA_NSIS_FAST=1")
	if out, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("packing the stand-ins: %v\n%s", err, out)
	}
	testenv.Copy(t, filepath.Join(dist, "StrataCompanionSetup-"+testenv.AppVersion(t)+".exe"), w.Drive(`t\setup.exe`), 0o755)

	const code = "K7QM-3XRP" // the stand-in lends with it
	run := func(args ...string) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := w.Command(ctx, args...)
		cmd.Env = append(append([]string(nil), cmd.Env...), "STANDIN_CODE="+code)
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return 0
	}
	if exit := run(`C:\t\setup.exe`, "/S", "/ROLE=lend"); exit != 0 {
		t.Errorf("the lend role's silent install exited %d, want 0 (4: no pairing code read back)", exit)
	}

	inst := w.Drive(`Program Files\Strata Companion`)
	var files []string
	ents, _ := os.ReadDir(inst)
	for _, e := range ents {
		files = append(files, e.Name())
	}
	sort.Strings(files)
	if got, want := strings.Join(files, " "), "LICENSE.txt strata-service.exe strata-vision-relay.exe uninstall.exe"; got != want {
		t.Errorf("the install folder holds %s, want %s", got, want)
	}
	standinLog := w.Drive(`ProgramData\StrataCompanion\standin.log`)
	if b, _ := os.ReadFile(standinLog); string(b) != "lend\n" {
		t.Errorf("the installer ran strata-service with %q, want lend alone (no install, no start)", b)
	}
	if out, ok := w.Run("sc", "query", "strata-companion"); ok && strings.Contains(out, "STATE") {
		t.Errorf("a Strata service is registered:\n%s", out)
	}
	if out, _ := w.Run("reg", "query", `HKLM\Software\StrataCompanion`, "/v", "Role"); !strings.Contains(out, "lend") {
		t.Errorf("the role is not remembered as lend:\n%s", out)
	}
	if out, _ := w.Run("reg", "query", `HKLM\Software\StrataCompanion`, "/v", "StrataRoot"); strings.Contains(out, "StrataRoot") {
		t.Errorf("a lending PC remembers a Strata folder:\n%s", out)
	}
	menu := w.Drive(`ProgramData\Microsoft\Windows\Start Menu\Programs\Strata Companion`)
	var links []string
	ents, _ = os.ReadDir(menu)
	for _, e := range ents {
		links = append(links, e.Name())
	}
	sort.Strings(links)
	if got, want := strings.Join(links, ", "), "New pairing code.lnk, Strata Companion Logs.lnk, Uninstall Strata Companion.lnk"; got != want {
		t.Errorf("the Start menu holds %s, want %s", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(menu, "New pairing code.lnk")); err != nil || len(b) < 0x16 || b[0x15]&0x20 == 0 {
		t.Errorf("New pairing code does not run as administrator (the .lnk's SLDF_RUNAS_USER): %v", err)
	}
	home := w.Drive(`users`)
	views, _ := filepath.Glob(filepath.Join(home, "*", "AppData", "Local", "StrataCompanion", "lending.json"))
	if len(views) != 1 {
		t.Fatalf("the stand-in's view of lending: %v", views)
	}
	if s, err := lendshown.ReadFile(views[0]); err != nil || s.Code != code {
		t.Errorf("the view the Finish page reads: %+v, %v", s, err)
	}

	// The uninstaller undoes lending first, then removes everything.
	if exit := run(inst+`\uninstall.exe`, "/S"); exit != 0 {
		t.Errorf("the silent uninstall exited %d", exit)
	}
	// The logs folder is the last thing it removes.
	gone := func(p string) bool { _, err := os.Stat(p); return os.IsNotExist(err) }
	testenv.WaitFor(t, 60*time.Second, "the uninstall done", func() bool {
		return gone(inst) && gone(w.Drive(`ProgramData\StrataCompanion\logs`))
	})
	if b, _ := os.ReadFile(standinLog); string(b) != "lend\nlend stop\n" {
		t.Errorf("strata-service ran with %q, want lend, then lend stop from the uninstaller", b)
	}
	if _, err := os.Stat(views[0]); !os.IsNotExist(err) {
		t.Errorf("the view of lending outlived lend stop: %v", err)
	}
	if _, err := os.Stat(menu); !os.IsNotExist(err) {
		t.Errorf("the Start menu folder outlived the uninstall: %v", err)
	}
	if _, ok := w.Run("reg", "query", `HKLM\Software\StrataCompanion`); ok {
		t.Error(`HKLM\Software\StrataCompanion outlived the uninstall`)
	}
}
