package agentcmd

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-companion/companion/internal/remotecmd"
)

// Every command the package writes reads back as itself.
func TestParseReadsBackWhatArgvWrites(t *testing.T) {
	three := 3
	for _, c := range []Command{
		{Program: "/a b/strata-vision-relay", Verb: VerbAgent},
		{Program: "/a/strata-vision-relay", Verb: VerbAgent, Agent: Agent{Encoder: "/a/strata-vision", Mmproj: "/a/mm.gguf", Model: "/a/v.gguf",
			GPU: true, Threads: 8, MaxTokens: 1024, IdleStopS: 300, CUDADevice: &three, EncoderArgs: []string{"--min-tokens", "64", "--x", "a b;c"}}},
		{Program: "/a/strata-vision-relay", Verb: VerbAgent, Agent: Agent{InstallSHA256: []string{strings.Repeat("0f", 32), strings.Repeat("a1", 32)}, Dir: "/d", Scratch: "/s"}},
		{Program: "p", Verb: VerbProbe, Probe: Probe{Encoder: "strata-vision", Files: []string{"mm.gguf", "v.gguf"}}},
		{Program: "p", Verb: VerbSource, Bytes: 4 << 20},
		{Program: "p", Verb: VerbSink}, {Program: "p", Verb: VerbVersion}, {Program: "p", Verb: VerbUnpair},
		{Program: "p", Verb: VerbGate, Gate: Gate{Allow: []string{"aa", "bb"}, Encoder: "/opt/strata-vision", Keys: "/home/a/.ssh/authorized_keys"}},
		{Verb: VerbKill, PID: 4242},
	} {
		for _, goos := range []string{"linux", "windows"} {
			got, err := Parse(c.Argv(goos))
			if err != nil || !reflect.DeepEqual(got, c) {
				t.Errorf("%s %q:\n got %+v %v\nwant %+v", goos, c.Argv(goos), got, err, c)
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, argv := range [][]string{
		{}, {"p"}, {"p", "shell"}, {"p", "agent", "--gpu", "--gpu"}, {"p", "agent", "--threads"}, {"p", "agent", "--threads", "1e3"},
		{"p", "agent", "--cuda-device", "64"}, {"p", "agent", "--encoder", ""}, {"p", "agent", "x"}, {"p", "agent", "--install-sha256", "zz"},
		{"p", "agent", "--encoder-args", EncodeArgs(make([]string, MaxEncoderArgs+1))}, {"p", "agent", "--encoder-args", EncodeArgs([]string{"a\nb"})},
		{"p", "agent", "--encoder-args", EncodeArgs([]string{strings.Repeat("x", MaxEncoderArgBytes+1)})},
		{"p", "version", "x"}, {"p", "source"}, {"p", "source", "01"}, {"p", "source", "1073741825"}, {"p", "probe", "x"},
		{"kill", "-9", "1"}, {"kill", "-KILL", "0"}, {"kill", "-KILL", "-1"}, {"taskkill", "/F", "/PID", "1"}, {"p", "gate", "--shell"},
	} {
		if c, err := Parse(argv); err == nil {
			t.Errorf("%q was read as %+v", argv, c)
		}
	}
}

// What remotecmd.Quote writes for a second PC's shell, Split reads back
// word for word; for POSIX, sh itself agrees.
func FuzzQuoteThenSplit(f *testing.F) {
	for _, s := range []string{"a b", `C:\x y\`, `a"b`, "it's", "%PATH%", "a\\\\", `\\server\share`, "ü 画像", "--x=a b", ""} {
		f.Add(s, "plain")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		argv := []string{"prog", a, b}
		for _, goos := range []string{"linux", "windows"} {
			line, err := remotecmd.Quote(goos, argv)
			if err != nil {
				continue // refused, not quoted: fine
			}
			got, err := Split(goos, line)
			if err != nil || !reflect.DeepEqual(got, argv) {
				t.Fatalf("%s: %q -> %q -> %q %v", goos, argv, line, got, err)
			}
		}
	})
}

func TestSplitAgreesWithSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, argv := range [][]string{{"a b", "it's", `back\slash`, "ü"}, {"", "x"}, {`"q"`, "two  spaces"}} {
		line, err := remotecmd.Quote("linux", append([]string{"printf", `%s\0`}, argv...))
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sh, "-c", line).Output()
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		got, err := Split("linux", line)
		if err != nil || !reflect.DeepEqual(got[2:], want) {
			t.Errorf("%q: sh reads %q, Split %q %v", line, want, got, err)
		}
	}
}

func TestSplitRefusesShellSyntax(t *testing.T) {
	for goos, lines := range map[string][]string{
		"linux":   {"a; id", "a $(id)", "a `id`", "a | sh", "a > f", "a && b", "a\nb", `a "$x"`, "a 'b", `a "b`, `a \`},
		"windows": {"a & calc", "a | x", "%x%", "a ^ b", "a > f", "a\r\nb", `"a`, "!x!"},
	} {
		for _, l := range lines {
			if got, err := Split(goos, l); err == nil {
				t.Errorf("%s %q was split: %q", goos, l, got)
			}
		}
	}
}
