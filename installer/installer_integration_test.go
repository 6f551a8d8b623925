package installer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"debug/pe"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/strata-companion/companion/internal/testenv"
)

// programs are the four Windows programs and whether each is a GUI program.
var programs = map[string]bool{
	"strata-service.exe":      false,
	"strata-vision-relay.exe": false,
	"strata-tray.exe":         true,
	"strata-setup.exe":        true,
}

// agents are the relay's Linux builds for a second PC, in subfolders of the
// install folder where `strata-service remote prepare` looks for them.
var agents = map[string]elf.Machine{
	`linux-amd64\strata-vision-relay`: elf.EM_X86_64,
	`linux-arm64\strata-vision-relay`: elf.EM_AARCH64,
}

// installed is what the installer puts into the install folder.
var installed = []string{
	"LICENSE.txt", "strata-service.exe", "strata-setup.exe", "strata-tray.exe",
	"strata-vision-relay.exe", "uninstall.exe",
}

func readScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("strata-companion.nsi")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The uninstaller must remove every file and shortcut the installer makes:
// anything it forgets stays on the user's disk for ever.
func TestUninstallerRemovesWhatTheInstallerMakes(t *testing.T) {
	s := readScript(t)
	un := s[strings.Index(s, `Section "Uninstall"`):]
	inst := s[:strings.Index(s, `Section "Uninstall"`)]

	// Both roles' sections: each thing once.
	var made []string
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			made = append(made, f)
		}
	}
	for _, f := range madeBy(inst) {
		add(f)
	}
	// 4 shortcuts for running Strata, and the lend role's New pairing code.
	if len(made) != len(installed)+len(agents)+5 {
		t.Fatalf("found %d files and shortcuts in the install sections, want %d (6 files, 2 agents, 5 shortcuts): %q", len(made), len(installed)+len(agents)+5, made)
	}
	for a := range agents {
		dir := `$INSTDIR\` + a[:strings.IndexByte(a, '\\')]
		if !strings.Contains(un, `RMDir "`+dir+`"`) {
			t.Errorf("the uninstaller does not remove the folder %s", dir)
		}
	}
	for _, f := range made {
		if !strings.Contains(un, `Delete "`+f+`"`) {
			t.Errorf("the installer makes %s but the uninstaller does not delete it", f)
		}
	}
	if strings.Contains(inst, `WriteRegStr HKLM "${RUNKEY}" "${RUNVALUE}"`) &&
		!strings.Contains(un, `DeleteRegValue HKLM "${RUNKEY}" "${RUNVALUE}"`) {
		t.Error("the login entry is written but not removed by the uninstaller")
	}
	for _, key := range []string{"${UNINSTKEY}", "${REGKEY}"} {
		if !strings.Contains(un, `DeleteRegKey HKLM "`+key+`"`) {
			t.Errorf("the uninstaller does not remove HKLM %s", key)
		}
	}
	// Never anything under the Strata folder: no RMDir, Delete or write
	// with $StrataRoot in it anywhere.
	for _, m := range regexp.MustCompile(`(?m)^\s*(RMDir|Delete|File|SetOutPath)\b.*\$StrataRoot.*$`).FindAllString(s, -1) {
		t.Errorf("the script touches the Strata folder: %s", strings.TrimSpace(m))
	}
}

// madeBy lists the files and shortcuts a part of the script makes.
func madeBy(part string) []string {
	var made []string
	for _, m := range regexp.MustCompile(`(?m)^\s*File "\$\{BINDIR\}/([^"]+)"`).FindAllStringSubmatch(part, -1) {
		made = append(made, `$INSTDIR\`+strings.ReplaceAll(m[1], "/", `\`))
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*File "/oname=([^"]+)"`).FindAllStringSubmatch(part, -1) {
		made = append(made, `$INSTDIR\`+m[1])
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*WriteUninstaller "([^"]+)"`).FindAllStringSubmatch(part, -1) {
		made = append(made, m[1])
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*CreateShortcut "([^"]+)"`).FindAllStringSubmatch(part, -1) {
		made = append(made, m[1])
	}
	return made
}

// block is the script's text from the line starting with head to the next
// line that is end (a section or a function), "" when there is none.
func block(s, head, end string) string {
	i := strings.Index(s, "\n"+head)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], "\n"+end+"\n")
	if j < 0 {
		return ""
	}
	return s[i : i+j]
}

// The lend role (a PC lending its GPU, without Strata) installs only the
// command line and the relay, and registers no Strata service: what it
// runs is `strata-service lend`, also in every function it calls; its
// uninstaller undoes lending first, while strata-service.exe is there.
func TestLendRoleInstallsNoStrataService(t *testing.T) {
	s := readScript(t)
	sec := block(s, `Section "-Lend this PC's GPU" SecLend`, "SectionEnd")
	if sec == "" {
		t.Fatal("the script has no lend section")
	}
	var files []string
	for _, f := range madeBy(sec) {
		if !strings.HasSuffix(f, ".lnk") {
			files = append(files, strings.TrimPrefix(f, `$INSTDIR\`))
		}
	}
	sort.Strings(files)
	if got, want := strings.Join(files, " "), "LICENSE.txt strata-service.exe strata-vision-relay.exe uninstall.exe"; got != want {
		t.Errorf("the lend role installs %s, want %s", got, want)
	}
	// Its section and every function it calls (one level: those call no
	// service commands of their own but EndPrograms and ServiceCmd).
	parts := []string{sec}
	for _, m := range regexp.MustCompile(`(?m)^\s*Call (\w+)`).FindAllStringSubmatch(sec, -1) {
		f := block(s, "Function "+m[1], "FunctionEnd")
		if f == "" {
			t.Errorf("the lend section calls %s, which the script does not define", m[1])
		}
		parts = append(parts, f)
	}
	all := strings.Join(parts, "\n")
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`ServiceCmd ["'](install|start)\b`),
		regexp.MustCompile(`WriteReg\w+ HKLM "\$\{RUNKEY\}"`),
		regexp.MustCompile(`strata-(tray|setup)\.exe" `),
	} {
		if m := bad.FindString(all); m != "" {
			t.Errorf("the lend role registers or starts something of Strata's: %s", m)
		}
	}
	if !strings.Contains(sec, `!insertmacro ServiceCmd "lend"`) {
		t.Error("the lend role does not run strata-service lend")
	}
	// StopOld, shared with the Strata role, may stop the Strata service of a
	// version installed before, never register one.
	if f := block(s, "Function StopOld", "FunctionEnd"); !strings.Contains(f, `ServiceCmd "uninstall"`) || !strings.Contains(f, `net.exe" stop strata-lender`) {
		t.Errorf("StopOld does not stop the old services:\n%s", f)
	}
	un := block(s, `Section "Uninstall"`, "SectionEnd")
	stop, del := strings.Index(un, `!insertmacro un.ServiceCmd "lend stop"`), strings.Index(un, `Delete "$INSTDIR\strata-service.exe"`)
	if stop < 0 || del < 0 || stop > del {
		t.Error("the uninstaller does not run strata-service lend stop before removing strata-service.exe")
	}
	for _, want := range []string{`${GetOptions} $R0 "/ROLE=" $R1`, `WriteRegStr HKLM "${REGKEY}" "Role" "$Role"`, `ReadRegStr $Role HKLM "${REGKEY}" "Role"`,
		`Page custom RolePageCreate RolePageLeave`} {
		if !strings.Contains(s, want) {
			t.Errorf("the script lacks %s", want)
		}
	}
}

// Registry values Add/Remove Programs shows, and the silent-mode contract.
func TestScriptDeclaresTheContract(t *testing.T) {
	s := readScript(t)
	for _, v := range []string{"DisplayName", "DisplayVersion", "Publisher", "DisplayIcon", "EstimatedSize",
		"UninstallString", "QuietUninstallString", "InstallLocation", "NoModify", "NoRepair"} {
		if !regexp.MustCompile(`WriteReg(Str|DWORD) HKLM "\$\{UNINSTKEY\}" "` + v + `"`).MatchString(s) {
			t.Errorf("the Add/Remove Programs entry lacks %s", v)
		}
	}
	for _, want := range []string{
		`RequestExecutionLevel admin`,
		`InstallDir "$PROGRAMFILES64\${PRODUCT}"`,
		`${GetOptions} $R0 "/STRATA=" $R1`,
		`${GetOptions} $R0 "/KEEPSETTINGS=" $R1`,
		`${GetOptions} $R0 "/RESTOREVISION=" $R1`,
		`install --strata-root "$StrataRoot"`,
		`!insertmacro un.ServiceCmd "vision restore --yes"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the script lacks %s", want)
		}
	}
}

// TestBuildSignAndInspect runs the real build (cross-compiles the four
// programs with their resources, makensis with warnings as errors) with a
// throwaway signing certificate through test-signing.sh, then looks inside
// what came out. With a warm Go build cache it takes about a minute; cold,
// the cgo Windows builds take several minutes.
func TestBuildSignAndInspect(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Windows programs and the installer (minutes): not with -short")
	}
	testenv.LookPath(t, "bash", "go", "makensis", "x86_64-w64-mingw32-gcc", "osslsigncode", "openssl", "7zz")
	dist := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "test-signing.sh")
	cmd.Env = append(os.Environ(), "DIST="+dist)
	// One Windows build for the checkout: the programs `make build-windows`
	// made (CI runs it next to the tests) are copied, and signed here, when
	// they were built from this same source; else build.sh builds them.
	if prebuilt, err := filepath.Abs(filepath.Join("..", "bin", "windows-amd64")); err == nil {
		cmd.Env = append(cmd.Env, "STRATA_WINDOWS_PREBUILT="+prebuilt)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("test-signing.sh:\n%s", out)
	if err != nil {
		t.Fatalf("test-signing.sh failed: %v", err)
	}
	if bytes.Contains(out, []byte("== reusing the Windows programs")) {
		t.Log("the Windows programs came from make build-windows (same source)")
	}
	for _, want := range []string{"verified: uninstall.exe", "signing: all signatures verify"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("test-signing.sh did not report %q", want)
		}
	}

	version := testenv.AppVersion(t)
	setup := filepath.Join(dist, "StrataCompanionSetup-"+version+".exe")

	// The installer: a 64-bit program (the 32-bit stub does not run under
	// wine here, and $PROGRAMFILES64 is what we want) asking for elevation.
	checkPE(t, setup, true)
	if m := resource(t, setup, "MANIFEST"); !strings.Contains(m, `level="requireAdministrator"`) {
		t.Errorf("the installer's manifest does not ask for administrator rights:\n%s", m)
	}

	// What it installs: exactly our files, and the programs in it are the
	// signed ones in dist/.
	unpacked := t.TempDir()
	if out, err := exec.Command("7zz", "x", "-y", "-o"+unpacked, setup).CombinedOutput(); err != nil {
		t.Fatalf("7zz x: %v\n%s", err, out)
	}
	var got []string
	ents, _ := os.ReadDir(unpacked)
	for _, e := range ents {
		if !e.IsDir() {
			got = append(got, e.Name())
		}
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(installed, " ") {
		t.Errorf("the installer holds %v, want %v", got, installed)
	}
	for a, machine := range agents {
		f, err := elf.Open(filepath.Join(unpacked, filepath.FromSlash(strings.ReplaceAll(a, `\`, "/"))))
		if err != nil {
			t.Errorf("the installer's agent %s: %v", a, err)
			continue
		}
		if f.Machine != machine || f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
			t.Errorf("the installer's agent %s is a %v %v, want a Linux %v program", a, f.Machine, f.Type, machine)
		}
		f.Close()
	}
	for name, gui := range programs {
		built := filepath.Join(dist, "windows-amd64", name)
		if sum(t, built) != sum(t, filepath.Join(unpacked, name)) {
			t.Errorf("%s in the installer is not the one built (and signed) in %s", name, dist)
		}
		checkPE(t, built, gui)
		m := resource(t, built, "MANIFEST")
		if !strings.Contains(m, `level="asInvoker"`) {
			t.Errorf("%s should run as the user who starts it (asInvoker):\n%s", name, m)
		}
		if gui && !strings.Contains(m, "permonitorv2") {
			t.Errorf("%s: a GUI program should be per-monitor DPI aware:\n%s", name, m)
		}
		v := resource(t, built, "version.txt")
		if !strings.Contains(v, version) || !strings.Contains(v, "Strata Companion") {
			t.Errorf("%s: version information lacks the product or version %s:\n%s", name, version, v)
		}
		if !strings.Contains(resourceList(t, built), "GROUP_ICON/APP") {
			t.Errorf("%s has no icon", name)
		}
	}

	t.Run("wine", func(t *testing.T) { wineSmoke(t, dist, setup) })
}

// wineSmoke installs, upgrades and uninstalls the installer under wine
// (wine-smoke.sh). wine is big and slow to install, so CI runs this only when
// it installs wine: STRATA_TEST_WINE=1 makes a missing wine a failure.
func wineSmoke(t *testing.T, dist, setup string) {
	for _, p := range []string{"wine", "wineserver", "Xvfb"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("STRATA_TEST_WINE") == "1" {
				t.Fatalf("STRATA_TEST_WINE=1 but %s is not installed (apt-get install wine wine64 xvfb)", p)
			}
			t.Skipf("%s is not installed: the wine smoke test runs where wine is (set STRATA_TEST_WINE=1 to require it)", p)
		}
	}
	// An "older version" to upgrade from: the same programs repacked as
	// 0.0.1 (no rebuild, no signing).
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "STRATA_SIGN_") && !strings.HasPrefix(e, "VERSION=") {
			env = append(env, e)
		}
	}
	env = append(env, "DIST="+dist)
	older := exec.Command("bash", "build.sh", "--skip-build")
	// Its size does not matter: zlib packs it in seconds (LZMA: a minute).
	older.Env = append(env, "VERSION=0.0.1", "STRATA_NSIS_FAST=1")
	if out, err := older.CombinedOutput(); err != nil {
		t.Fatalf("repacking an older installer: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "wine-smoke.sh", setup, filepath.Join(dist, "StrataCompanionSetup-0.0.1.exe"))
	cmd.Env = env
	// wineserver may keep our pipes open a moment after the script ends.
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("wine-smoke.sh:\n%s", out)
	if err != nil {
		t.Fatalf("wine smoke test failed: %v", err)
	}
	for _, want := range []string{
		"ok:   service registered",
		"ok:   the Strata config's earlier vision block is back",
		"wine smoke test: all checks passed",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("wine-smoke.sh did not report %q", want)
		}
	}
}

// checkPE checks a Windows program is 64-bit and of the right subsystem: a
// GUI program must not open a console window.
func checkPE(t *testing.T, path string, gui bool) {
	t.Helper()
	f, err := pe.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
		t.Errorf("%s: machine %#x, want amd64", filepath.Base(path), f.Machine)
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok {
		t.Fatalf("%s: not a PE32+ image", path)
	}
	want := uint16(pe.IMAGE_SUBSYSTEM_WINDOWS_CUI)
	if gui {
		want = pe.IMAGE_SUBSYSTEM_WINDOWS_GUI
	}
	if oh.Subsystem != want {
		t.Errorf("%s: subsystem %d, want %d (GUI %v)", filepath.Base(path), oh.Subsystem, want, gui)
	}
}

func resourceList(t *testing.T, exe string) string {
	t.Helper()
	out, err := exec.Command("7zz", "l", "-tpe", exe).CombinedOutput()
	if err != nil {
		t.Fatalf("7zz l %s: %v\n%s", exe, err, out)
	}
	return string(out)
}

// resource returns the text of the resource whose path under .rsrc ends
// with name (7-Zip shows a PE's resources as files).
func resource(t *testing.T, exe, name string) string {
	t.Helper()
	var path string
	for _, line := range strings.Split(resourceList(t, exe), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[len(f)-1], ".rsrc/") && strings.Contains(f[len(f)-1], name) {
			path = f[len(f)-1]
			break
		}
	}
	if path == "" {
		t.Errorf("%s has no %s resource", filepath.Base(exe), name)
		return ""
	}
	out, err := exec.Command("7zz", "e", "-so", "-tpe", exe, path).Output()
	if err != nil {
		t.Fatalf("7zz e %s %s: %v", exe, path, err)
	}
	// 7-Zip renders the version resource as UTF-16LE text.
	if len(out) > 2 && (out[1] == 0 || out[0] == 0xff && out[1] == 0xfe) {
		start := 0
		if out[0] == 0xff {
			start = 2
		}
		u := make([]uint16, 0, len(out)/2)
		for i := start; i+1 < len(out); i += 2 {
			u = append(u, uint16(out[i])|uint16(out[i+1])<<8)
		}
		return string(utf16.Decode(u))
	}
	return string(out)
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}
