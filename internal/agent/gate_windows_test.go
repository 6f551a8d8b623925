package agent

import (
	"strings"
	"testing"
)

// The gate on a Windows second PC: the relay's cmd.exe-quoted command lines
// split back to the same arguments; cmd.exe syntax is refused.
func TestGateOnWindows(t *testing.T) {
	self := `C:\Users\Ana Lu\strata-companion\strata-vision-relay.exe`
	dir := `C:\Users\Ana Lu\strata-companion`
	q := quoter(t, "windows")
	got, err := gateCheck(q(self, "agent", "--encoder", dir+`\strata-vision.exe`, "--mmproj", "mm.gguf", "--model", dir+`\v.gguf`, "--gpu"), self, nil)
	want := []string{"agent", "--encoder", dir + `\strata-vision.exe`, "--mmproj", dir + `\mm.gguf`, "--model", dir + `\v.gguf`, "--gpu"}
	if err != nil || strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("agent command:\n got %q %v\nwant %q", got, err, want)
	}
	if got, err := gateCheck("taskkill /F /T /PID 4242", self, nil); err != nil || strings.Join(got, " ") != "kill 4242" {
		t.Errorf("taskkill: %q %v", got, err)
	}
	for _, cmd := range []string{"", "cmd.exe", "whoami", q(self, "agent") + " & calc", `"` + self + `" agent --encoder "C:\x" & calc & ""`,
		q(self, "agent", "--encoder", `C:\Windows\System32\calc.exe`), `"` + self + `" agent --mmproj %USERPROFILE%\x`} {
		if got, err := gateCheck(cmd, self, nil); err == nil {
			t.Errorf("%q was allowed: %q", cmd, got)
		}
	}
}
