//go:build linux

package lend

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/testenv"
)

// Announce and Browse send multicast, so these tests never call them: they
// run in cmd/lend-probe (testenv.StartLendProbe), started with `ip netns
// exec` inside a testenv.LAN host, and the probe itself refuses to run in
// this process's own network namespace. Nothing reaches this machine's own
// interfaces.

// announce starts a lender in h and waits until Announce has returned.
func announce(t *testing.T, h *testenv.LANHost, a Announcement) *testenv.LendProbe {
	t.Helper()
	b, _ := json.Marshal(a)
	p := testenv.StartLendProbe(t, h, "announce", string(b))
	p.Expect("ANNOUNCED", 30*time.Second)
	return p
}

// withdraw ends p's announcement and returns how long withdraw took.
func withdraw(p *testenv.LendProbe) time.Duration {
	p.CloseInput()
	var ns int64
	fmt.Sscan(p.Expect("WITHDRAWN", 10*time.Second), &ns)
	return time.Duration(ns)
}

// browseIn runs Browse(wait) in h.
func browseIn(t *testing.T, h *testenv.LANHost, wait time.Duration) []Announcement {
	t.Helper()
	p := testenv.StartLendProbe(t, h, "browse", wait.String())
	var list []Announcement
	if err := json.Unmarshal([]byte(p.Expect("LIST", wait+30*time.Second)), &list); err != nil {
		t.Fatal(err)
	}
	return list
}

func TestAnnounceBrowseIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a LAN of network namespaces, starts sshd and lend-probe in them")
	}
	lan := testenv.NewLAN(t, 3)
	me, lender, impostor := lan.Hosts[0], lan.Hosts[1], lan.Hosts[2]
	sshd := testenv.StartSSHD(t, testenv.SSHDOptions{Netns: lender.Name, ListenHost: lender.Addr})
	real := Announcement{
		Name:         "GAMING-LAPTOP",
		Port:         sshd.Port,
		PairPort:     47001,
		GPUs:         []GPU{{Name: "NVIDIA GeForce RTX 4070 Laptop GPU", TotalMiB: 8188}},
		AgentVersion: "0.1.0-dev",
		HostKey:      ssh.FingerprintSHA256(sshd.HostSigner.PublicKey()),
		OS:           "windows",
	}
	const wait = 3 * time.Second
	goodbyes := testenv.StartLendProbe(t, me, "goodbyes")
	goodbyes.Expect("LISTENING", 30*time.Second)
	lenderProbe := announce(t, lender, real)

	got := browseIn(t, me, wait)
	want := real
	want.Host, want.Addrs = lender.Addr, []string{lender.Addr}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("Browse from host 0 = %+v\nwant [%+v]", got, want)
	}
	// What it found is the way in: the ssh server at Host:Port, with the
	// host key the announcement claimed.
	conn, err := me.Dial("tcp", fmt.Sprintf("%s:%d", got[0].Host, got[0].Port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = ssh.NewClientConn(conn, got[0].Host, &ssh.ClientConfig{
		User: sshd.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(sshd.ClientSigner)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if fp := ssh.FingerprintSHA256(key); fp != got[0].HostKey {
				return fmt.Errorf("host key %s, announced %s", fp, got[0].HostKey)
			}
			return nil
		},
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("ssh to the announced lender: %v", err)
	}
	conn.Close()

	// An impostor takes the same name with another host key: both are
	// listed, each with its own address (pairing tells them apart).
	fake := real
	fake.HostKey = fp2
	fake.Port = 2222
	announce(t, impostor, fake)
	got = browseIn(t, me, wait)
	wantFake := fake
	wantFake.Host, wantFake.Addrs = impostor.Addr, []string{impostor.Addr}
	if len(got) != 2 {
		t.Fatalf("Browse with an impostor = %+v, want both", got)
	}
	byKey := map[string]Announcement{got[0].HostKey: got[0], got[1].HostKey: got[1]}
	if !reflect.DeepEqual(byKey[real.HostKey], want) || !reflect.DeepEqual(byKey[fp2], wantFake) {
		t.Errorf("Browse with an impostor = %+v\nwant %+v and %+v", got, want, wantFake)
	}

	// Withdraw: the goodbye goes out, and the lender is no longer listed.
	took := withdraw(lenderProbe)
	t.Logf("withdraw took %s", took)
	if g := goodbyes.Expect("GOODBYE", 10*time.Second); g != instanceLabel(real) {
		t.Errorf("goodbye for %q, want %q", g, instanceLabel(real))
	}
	got = browseIn(t, me, wait)
	if len(got) != 1 || got[0].HostKey != fp2 {
		t.Errorf("Browse after the withdraw = %+v, want the impostor alone", got)
	}

	// Multicast blocked (a guest network): nothing is found, while unicast
	// still reaches the lender's ssh server.
	if err := lan.BlockMulticast(); err != nil {
		t.Fatal(err)
	}
	if got := browseIn(t, me, wait); len(got) != 0 {
		t.Errorf("Browse with multicast blocked = %+v, want none", got)
	}
	if c, err := me.Dial("tcp", sshd.Addr(), 5*time.Second); err != nil {
		t.Errorf("unicast with multicast blocked: %v", err)
	} else {
		c.Close()
	}
	if err := lan.RestoreMulticast(); err != nil {
		t.Fatal(err)
	}
	if got := browseIn(t, me, wait); len(got) != 1 {
		t.Errorf("Browse after RestoreMulticast = %+v, want the impostor", got)
	}

	// The impostor off the LAN: not listed; back on it: listed again.
	if err := impostor.CutLink(); err != nil {
		t.Fatal(err)
	}
	if got := browseIn(t, me, wait); len(got) != 0 {
		t.Errorf("Browse with the only lender's link cut = %+v, want none", got)
	}
	if err := impostor.RestoreLink(); err != nil {
		t.Fatal(err)
	}
	if got := browseIn(t, me, wait); len(got) != 1 || got[0].Host != impostor.Addr {
		t.Errorf("Browse after RestoreLink = %+v, want the impostor at %s", got, impostor.Addr)
	}
}

func TestProbeRefusesThisMachinesOwnNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lend-probe")
	}
	bin := testenv.Program(t, "github.com/strata-companion/companion/internal/testenv/cmd/lend-probe")
	// A mode that sends nothing even if the refusal were broken.
	runs := [][]string{{"-root-netns", testenv.RootNetns, "no-such-mode"}, {"no-such-mode"}}
	if pid1, _ := os.Readlink("/proc/1/ns/net"); pid1 == testenv.RootNetns {
		// Process 1's namespace is refused even when -root-netns names another.
		runs = append(runs, []string{"-root-netns", "net:[1]", "no-such-mode"})
	}
	for _, args := range runs {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "refusing") {
			t.Errorf("lend-probe %q here: %v, %s", args, err, out)
		}
	}
}
