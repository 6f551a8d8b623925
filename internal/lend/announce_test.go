package lend

import (
	"net"
	"reflect"
	"strings"
	"testing"
)

// These tests send nothing: Announce and Browse run only in
// announce_integration_linux_test.go, inside a testenv.LAN.

const (
	fp1 = "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"
	fp2 = "SHA256:qnekPX3DsUHt1P6erji1+7zdmfridpQm8jloVOL/e3U"
)

func laptop() Announcement {
	return Announcement{
		Name:         "GAMING-LAPTOP",
		PairPort:     47001,
		GPUs:         []GPU{{Name: "NVIDIA GeForce RTX 4070 Laptop GPU", TotalMiB: 8188}, {Name: "AMD Radeon(TM) 780M", TotalMiB: 512}},
		AgentVersion: "0.1.0-dev",
		HostKey:      fp1,
		OS:           "windows",
	}
}

func TestTXTRoundTripsAndHoldsOnlyItsKeys(t *testing.T) {
	a := laptop()
	txt, err := a.TXT()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"v=1", "name=GAMING-LAPTOP", "pair=47001", "hostkey=" + fp1, "agent=0.1.0-dev", "os=windows",
		"gpu0=8188 NVIDIA GeForce RTX 4070 Laptop GPU", "gpu1=512 AMD Radeon(TM) 780M"}
	if !reflect.DeepEqual(txt, want) {
		t.Errorf("TXT() =\n%q\nwant\n%q", txt, want)
	}
	got, err := ParseTXT(txt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, a) {
		t.Errorf("ParseTXT(TXT()) = %+v, want %+v", got, a)
	}
	// Host, Addrs and Port are not the TXT record's: they never reach it.
	a.Host, a.Addrs, a.Port = "10.0.0.9", []string{"10.0.0.9"}, 22
	txt2, _ := a.TXT()
	if !reflect.DeepEqual(txt2, want) {
		t.Errorf("Host/Addrs/Port changed the TXT record: %q", txt2)
	}
}

func TestTXTWithoutGPUs(t *testing.T) {
	a := laptop()
	a.GPUs = nil
	a.OS = "linux"
	txt, err := a.TXT()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseTXT(txt)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Errorf("ParseTXT(%q) = %+v, %v", txt, got, err)
	}
}

func TestTXTRefusesWhatItCannotCarry(t *testing.T) {
	for name, edit := range map[string]func(*Announcement){
		"empty name":        func(a *Announcement) { a.Name = "" },
		"name of 64 bytes":  func(a *Announcement) { a.Name = strings.Repeat("x", 64) },
		"name with newline": func(a *Announcement) { a.Name = "PC\nv=2" },
		"name not UTF-8":    func(a *Announcement) { a.Name = "PC\xff" },
		"pair port 0":       func(a *Announcement) { a.PairPort = 0 },
		"pair port 65536":   func(a *Announcement) { a.PairPort = 65536 },
		"host key MD5":      func(a *Announcement) { a.HostKey = "MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48" },
		"host key short":    func(a *Announcement) { a.HostKey = "SHA256:47DEQpj8HBSa" },
		"host key padded":   func(a *Announcement) { a.HostKey = fp1 + "=" },
		"no agent version":  func(a *Announcement) { a.AgentVersion = "" },
		"agent with space":  func(a *Announcement) { a.AgentVersion = "1.0 beta" },
		"os darwin":         func(a *Announcement) { a.OS = "darwin" },
		"17 GPUs":           func(a *Announcement) { a.GPUs = make([]GPU, 17) },
		"GPU without name":  func(a *Announcement) { a.GPUs = []GPU{{TotalMiB: 1}} },
		"GPU memory < 0":    func(a *Announcement) { a.GPUs = []GPU{{Name: "x", TotalMiB: -1}} },
		"GPU name too long": func(a *Announcement) { a.GPUs = []GPU{{Name: strings.Repeat("x", 201), TotalMiB: 1}} },
	} {
		a := laptop()
		edit(&a)
		if txt, err := a.TXT(); err == nil {
			t.Errorf("%s: TXT() = %q, want an error", name, txt)
		}
	}
	// The longest GPU name that is accepted still fits a TXT string.
	a := laptop()
	a.GPUs = []GPU{{Name: strings.Repeat("x", MaxGPUNameBytes), TotalMiB: 1 << 24}}
	txt, err := a.TXT()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range txt {
		if len(s) > 255 {
			t.Errorf("%d bytes: %.40q", len(s), s)
		}
	}
}

func TestParseTXTIsStrict(t *testing.T) {
	good, _ := laptop().TXT()
	with := func(edit func([]string) []string) []string {
		return edit(append([]string(nil), good...))
	}
	set := func(i int, s string) []string { return with(func(x []string) []string { x[i] = s; return x }) }
	drop := func(i int) []string {
		return with(func(x []string) []string { return append(x[:i], x[i+1:]...) })
	}
	add := func(s string) []string { return with(func(x []string) []string { return append(x, s) }) }
	for _, c := range []struct {
		name string
		txt  []string
		want string // in the error
	}{
		{"nothing", nil, "not a Strata lender"},
		{"another service's record", []string{"path=/", "txtvers=1"}, "not a Strata lender"},
		{"a later format", set(0, "v=2"), "update Strata Companion"},
		{"version with a space", set(0, "v=1 "), "v=\"1 \""},
		{"no name", drop(1), "no name="},
		{"no pair port", drop(2), "no pair="},
		{"no host key", drop(3), "no hostkey="},
		{"no agent", drop(4), "no agent="},
		{"no os", drop(5), "no os="},
		{"empty name", set(1, "name="), "PC name is empty"},
		{"name with a control character", set(1, "name=a\x1bb"), "unprintable"},
		{"pair port 0", set(2, "pair=0"), "not 1-65535"},
		{"pair port with a leading zero", set(2, "pair=047001"), "not a number"},
		{"pair port signed", set(2, "pair=+47001"), "not a number"},
		{"pair port too big", set(2, "pair=99999999999999999999"), "not a number"},
		{"host key not SHA256", set(3, "hostkey=SHA1:abc"), "SHA256:"},
		{"host key bad base64", set(3, "hostkey=SHA256:!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"), "43 base64"},
		{"os macos", set(5, "os=macos"), "not windows or linux"},
		{"duplicate key", add("name=IMPOSTOR"), "twice"},
		{"duplicate key in another case", add("NAME=IMPOSTOR"), "twice"},
		{"known key without value", set(5, "os"), "no value"},
		{"no key", add("=x"), "no key"},
		{"key not ASCII", add("nom\u00e9=x"), "printable ASCII"},
		{"GPU gap", add("gpu3=1 x"), "gpu3 but no gpu2"},
		{"GPU index with a leading zero", add("gpu02=1 x"), "gpu0 to gpu15"},
		{"GPU index too big", add("gpu16=1 x"), "gpu0 to gpu15"},
		{"GPU without memory", set(6, "gpu0=RTX"), "\"<MiB> <name>\""},
		{"GPU memory not a number", set(6, "gpu0=8G RTX"), "whole number"},
		{"GPU memory negative", set(6, "gpu0=-1 RTX"), "out of range"},
		{"GPU without a name", set(6, "gpu0=8188 "), "GPU name is empty"},
		{"string over 255 bytes", add("x=" + strings.Repeat("y", 254)), "over DNS's 255"},
	} {
		_, err := ParseTXT(c.txt)
		if err == nil {
			t.Errorf("%s: ParseTXT(%q) accepted it", c.name, c.txt)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to say %q", c.name, err, c.want)
		}
	}
}

func TestParseTXTTakesWhatRFC6763Allows(t *testing.T) {
	good, _ := laptop().TXT()
	want, _ := ParseTXT(good)
	for name, txt := range map[string][]string{
		"keys in capitals":         append([]string{"V=1", "NAME=GAMING-LAPTOP"}, good[2:]...),
		"an unknown key":           append(append([]string(nil), good...), "color=red", "flag"),
		"an empty string":          append([]string{""}, good...),
		"keys in another order":    append(append([]string(nil), good[3:]...), good[:3]...),
		"gpu without digits (new)": append(append([]string(nil), good...), "gpux=y"),
	} {
		got, err := ParseTXT(txt)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ParseTXT(%q) = %+v, %v", name, txt, got, err)
		}
	}
}

func TestInstanceLabelTellsLendersOfOneNameApart(t *testing.T) {
	a, b := laptop(), laptop()
	b.HostKey = fp2
	la, lb := instanceLabel(a), instanceLabel(b)
	if la == lb {
		t.Fatalf("same label %q for two host keys", la)
	}
	if !strings.HasPrefix(la, "GAMING-LAPTOP-") {
		t.Errorf("label %q does not start with the PC's name", la)
	}
	for _, name := range []string{"Büro PC (Anna's)", "...", strings.Repeat("é", 31), "a.b.c", strings.Repeat("x", 63)} {
		a.Name = name
		l := instanceLabel(a)
		if len(l) > 63 || strings.Trim(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" || strings.HasPrefix(l, "-") {
			t.Errorf("name %q: label %q is not a plain DNS label", name, l)
		}
	}
}

func TestOrderAddrsPrefersThisPCsOwnNetwork(t *testing.T) {
	_, home, _ := net.ParseCIDR("192.168.1.0/24")
	v4 := []net.IP{net.ParseIP("172.22.80.1"), net.ParseIP("192.168.1.23"), net.ParseIP("192.168.1.23")}
	v6 := []net.IP{net.ParseIP("fe80::1"), net.ParseIP("2001:db8::5")}
	got := orderAddrs(v4, v6, []*net.IPNet{home})
	want := []string{"192.168.1.23", "172.22.80.1", "2001:db8::5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("orderAddrs = %q, want %q", got, want)
	}
	if got := orderAddrs(nil, []net.IP{net.ParseIP("fe80::1")}, nil); len(got) != 0 {
		t.Errorf("a link-local address alone gave %q, want none (not usable without its zone)", got)
	}
}

func TestTruncateUTF8(t *testing.T) {
	if got := truncateUTF8(strings.Repeat("é", 40), 63); got != strings.Repeat("é", 31) {
		t.Errorf("cut inside a character: %q", got)
	}
}

func FuzzParseTXT(f *testing.F) {
	good, _ := laptop().TXT()
	f.Add(strings.Join(good, "\n"))
	f.Add("v=1\nname=x\npair=1\nhostkey=" + fp2 + "\nagent=1\nos=linux\ngpu0=0 g")
	f.Add("v=1\ngpu9=1 x\ngpu0=1 y")
	f.Add("")
	f.Add("=\n==\nv")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseTXT(strings.Split(s, "\n"))
		if err != nil {
			return
		}
		// What ParseTXT accepts is an announcement TXT writes back, the
		// same.
		txt, err := a.TXT()
		if err != nil {
			t.Fatalf("ParseTXT accepted %q as %+v, which TXT refuses: %v", s, a, err)
		}
		b, err := ParseTXT(txt)
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip of %+v: %+v, %v", a, b, err)
		}
	})
}
