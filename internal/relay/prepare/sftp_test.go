package prepare

import "testing"

func TestSFTPPath(t *testing.T) {
	for _, c := range []struct{ goos, in, want string }{
		{"windows", `C:\Users\sam\strata-companion\strata-vision-relay.exe`, "/C:/Users/sam/strata-companion/strata-vision-relay.exe"},
		{"windows", `strata-companion\strata-vision-relay.exe`, "strata-companion/strata-vision-relay.exe"},
		{"windows", `D:/models/x.gguf`, "/D:/models/x.gguf"},
		{"linux", `/home/sam/a\b`, `/home/sam/a\b`},
	} {
		if got := SFTPPath(c.goos, c.in); got != c.want {
			t.Errorf("SFTPPath(%s, %q) = %q, want %q", c.goos, c.in, got, c.want)
		}
	}
}
