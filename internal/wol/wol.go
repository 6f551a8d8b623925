// Package wol wakes a sleeping PC with a Wake-on-LAN magic packet: six 0xff
// bytes and the network card's MAC address sixteen times, sent as one UDP
// datagram to a broadcast address (by default 255.255.255.255, port 9).
package wol

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Defaults for where the packet goes.
const (
	DefaultBroadcast = "255.255.255.255"
	DefaultPort      = 9
)

// PacketSize is the magic packet's length.
const PacketSize = 6 + 16*6

// ParseMAC reads aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff or aabb.ccdd.eeff (a
// 6-byte Ethernet address only).
func ParseMAC(s string) (net.HardwareAddr, error) {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a network card address like aa:bb:cc:dd:ee:ff", s)
	}
	if len(hw) != 6 {
		return nil, fmt.Errorf("%q is not a 6-byte Ethernet address; Wake-on-LAN needs the wired or wireless card's MAC", s)
	}
	return hw, nil
}

// MagicPacket builds the packet for mac.
func MagicPacket(mac string) ([]byte, error) {
	hw, err := ParseMAC(mac)
	if err != nil {
		return nil, err
	}
	p := bytes.Repeat([]byte{0xff}, 6)
	for i := 0; i < 16; i++ {
		p = append(p, hw...)
	}
	return p, nil
}

// IsMagicPacket reports whether p is a magic packet, and for which MAC.
func IsMagicPacket(p []byte) (net.HardwareAddr, bool) {
	if len(p) < PacketSize || !bytes.Equal(p[:6], bytes.Repeat([]byte{0xff}, 6)) {
		return nil, false
	}
	mac := p[6:12]
	for i := 1; i < 16; i++ {
		if !bytes.Equal(p[6+6*i:12+6*i], mac) {
			return nil, false
		}
	}
	return net.HardwareAddr(append([]byte(nil), mac...)), true
}

// Send sends the magic packet for mac to broadcast:port (broadcast allowed
// on the socket). A few copies go out, since UDP may drop one.
func Send(mac, broadcast string, port int) error {
	p, err := MagicPacket(mac)
	if err != nil {
		return err
	}
	if broadcast == "" {
		broadcast = DefaultBroadcast
	}
	if port <= 0 {
		port = DefaultPort
	}
	if port > 65535 {
		return fmt.Errorf("port %d is not a UDP port", port)
	}
	dst, err := net.ResolveUDPAddr("udp4", net.JoinHostPort(broadcast, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("the wake broadcast address %q: %v", broadcast, err)
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = setBroadcast(fd) }); err != nil {
			return err
		}
		return serr
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pc, err := lc.ListenPacket(ctx, "udp4", ":0")
	if err != nil {
		return fmt.Errorf("cannot open a UDP socket for the wake packet: %v", err)
	}
	defer pc.Close()
	for i := 0; i < 3; i++ {
		if _, err := pc.WriteTo(p, dst); err != nil {
			return fmt.Errorf("sending the wake packet to %s: %v", dst, err)
		}
	}
	return nil
}
