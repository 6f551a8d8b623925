package wol

import (
	"net"
	"testing"
	"time"
)

func TestMagicPacketRoundTrip(t *testing.T) {
	p, err := MagicPacket("AA-bb-cc-01-02-03")
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != PacketSize {
		t.Fatalf("packet is %d bytes, want %d", len(p), PacketSize)
	}
	mac, ok := IsMagicPacket(p)
	if !ok || mac.String() != "aa:bb:cc:01:02:03" {
		t.Fatalf("IsMagicPacket = %v, %v", mac, ok)
	}
	p[50] ^= 1
	if _, ok := IsMagicPacket(p); ok {
		t.Fatal("a damaged packet was taken for a magic packet")
	}
	for _, bad := range []string{"", "aa:bb:cc", "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01", "zz:bb:cc:dd:ee:ff"} {
		if _, err := MagicPacket(bad); err == nil {
			t.Errorf("MagicPacket(%q) accepted", bad)
		}
	}
}

// TestSendReachesAListener sends to loopback (a unicast address works the
// same as a broadcast one for the socket); the netns test in internal/relay
// covers a real broadcast.
func TestSendReachesAListener(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	if err := Send("01:23:45:67:89:ab", "127.0.0.1", port); err != nil {
		t.Fatal(err)
	}
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if mac, ok := IsMagicPacket(buf[:n]); !ok || mac.String() != "01:23:45:67:89:ab" {
		t.Fatalf("received %x", buf[:n])
	}
	if err := Send("01:23:45:67:89:ab", "not an address", 9); err == nil {
		t.Fatal("a bad broadcast address was accepted")
	}
}
