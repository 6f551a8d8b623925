package remotecmd

import (
	"os/exec"
	"strings"
	"testing"
)

// H1: a folder with command syntax must never reach a shell as syntax.
// cmd.exe has no escape inside double quotes, so `"` ends the quote and
// `& calc &` runs: such an argument is refused, not quoted.
func TestCmdArgRefusesWhatCmdExeActsOn(t *testing.T) {
	for _, s := range []string{`C:\x" & calc & "`, `C:\%PATH%\x`, `C:\a!b!`, `C:\a^b`, `C:\a|b`, `C:\a>b`, "C:\\a\nb"} {
		if q, err := CmdArg(s); err == nil {
			t.Errorf("CmdArg(%q) = %q, want refused", s, q)
		}
		if q, err := Quote("windows", []string{"agent.exe", s}); err == nil {
			t.Errorf("Quote(windows, %q) = %q, want refused", s, q)
		}
	}
	for in, want := range map[string]string{
		`C:\Strata Vision\x.exe`:         `"C:\Strata Vision\x.exe"`,
		`D:\strata\strata-vision.exe`:    `D:\strata\strata-vision.exe`,
		`C:\Program Files (x86)\strata\`: `"C:\Program Files (x86)\strata\\"`, // a trailing \ must not escape the quote
		``:                               `""`,
	} {
		if got, err := CmdArg(in); err != nil || got != want {
			t.Errorf("CmdArg(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestCheckPathRefusesShellSyntax(t *testing.T) {
	for _, p := range []string{"$(id>/tmp/x)", "`id`", "a;id", "a&&id", "a|id", `C:\x" & calc & "`, "%COMSPEC%", "a\nid", "-oProxyCommand=x", "a*", "{a,b}"} {
		if err := CheckPath("remote_dir", p); err == nil {
			t.Errorf("CheckPath(%q) passed", p)
		}
	}
	for _, p := range []string{"", "strata-companion", "/home/ana/strata vision", `C:\Users\O'Brien\Strata (x86)\sv`, `C:\PROGRA~1\sv`, "/opt/strata-vision_1.2+3@x"} {
		if err := CheckPath("remote_dir", p); err != nil {
			t.Errorf("CheckPath(%q): %v", p, err)
		}
	}
}

// POSIX quoting is checked against a real sh: every argument comes back
// byte for byte, and nothing in it runs.
func TestPOSIXQuotingThroughSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	args := []string{"plain", "with space", "it's", "$(echo ran)", "`echo ran`", `a\b"c`, "semi;colon", "*", "~", ""}
	cmd, err := Quote("linux", append([]string{"printf", "[%s]\\n"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sh, "-c", cmd).Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	var want strings.Builder
	for _, a := range args {
		want.WriteString("[" + a + "]\n")
	}
	if string(out) != want.String() {
		t.Errorf("sh -c %s\n got %q\nwant %q", cmd, out, want.String())
	}
}

func TestJoinAgreesOnEveryOS(t *testing.T) {
	for _, c := range []struct{ goos, dir, name, want string }{
		{"windows", `C:\sv\`, "a.exe", `C:\sv\a.exe`},
		{"windows", `C:\sv`, `D:\e\x.exe`, `D:\e\x.exe`},
		{"windows", "", "a.exe", "a.exe"},
		{"windows", "strata-companion", "a.exe", `strata-companion\a.exe`},
		{"linux", "/home/a/sv/", "x", "/home/a/sv/x"},
		{"linux", "sv", "/opt/x", "/opt/x"},
		{"linux", "", "x", "x"},
	} {
		if got := Join(c.goos, c.dir, c.name); got != c.want {
			t.Errorf("Join(%s, %q, %q) = %q, want %q", c.goos, c.dir, c.name, got, c.want)
		}
	}
}

func TestPowerShell(t *testing.T) {
	if got := PowerShellLiteral(`C:\Users\o'neil`); got != `'C:\Users\o''neil'` {
		t.Errorf("PowerShellLiteral = %s", got)
	}
	if want := "powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand VwByAGkAdABlAC0ATwB1AHQAcAB1AHQAIAAnAOkAJwA="; EncodedPowerShell("Write-Output 'é'") != want {
		t.Errorf("EncodedPowerShell = %q", EncodedPowerShell("Write-Output 'é'"))
	}
}
