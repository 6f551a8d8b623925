//go:build linux

// Command lend-probe runs internal/lend's Announce and Browse for the tests
// and the bench, inside a testenv.LAN host's network namespace (`ip netns
// exec`), so that no multicast is ever sent on this machine's own network:
// it refuses to run in the namespace named by -root-netns (the test
// process's own, testenv.RootNetns), in that of process 1 (where it may read
// it), and without the flag.
//
//	lend-probe -root-netns NS announce JSON   Announce(JSON); "ANNOUNCED <start ns> <end ns>";
//	                                          at EOF on stdin, withdraw: "WITHDRAWN <ns it took>"
//	lend-probe -root-netns NS browse WAIT     Browse(WAIT): "LIST <JSON array>"
//	lend-probe -root-netns NS watch           Watch: "WATCHING <ns>", then "FOUND <ns> <JSON>" each; ends at EOF on stdin
//	lend-probe -root-netns NS goodbyes        every PTR record of the service with TTL 0 seen
//	                                          on UDP 5353: "GOODBYE <instance>"; ends at EOF on stdin
//
// Times are Unix nanoseconds (one clock for every namespace).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"

	"github.com/strata-companion/companion/internal/lend"
)

func main() {
	root := flag.String("root-netns", "", "the network namespace this must not run in (readlink /proc/self/ns/net of the test)")
	flag.Parse()
	// The test's namespace, and the one of process 1 (this machine's own)
	// where this machine lets it be read.
	here, err := os.Readlink("/proc/thread-self/ns/net")
	pid1, _ := os.Readlink("/proc/1/ns/net")
	if err != nil || *root == "" || here == *root || here == pid1 {
		fmt.Fprintf(os.Stderr, "lend-probe: refusing to run outside a test namespace (here %q, -root-netns %q, process 1's %q; %v)\n", here, *root, pid1, err)
		os.Exit(2)
	}
	args := flag.Args()
	if len(args) == 0 {
		die("usage: lend-probe -root-netns NS announce JSON | browse WAIT | watch | goodbyes")
	}
	// Every mode but browse ends when stdin closes (the test is done with
	// it, or died).
	eof, cancel := context.WithCancel(context.Background())
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	switch args[0] {
	case "announce":
		var a lend.Announcement
		if len(args) != 2 || json.Unmarshal([]byte(args[1]), &a) != nil {
			die("announce wants the announcement as JSON")
		}
		start := time.Now().UnixNano()
		withdraw, err := lend.Announce(context.Background(), a)
		if err != nil {
			die(err.Error())
		}
		fmt.Printf("ANNOUNCED %d %d\n", start, time.Now().UnixNano())
		<-eof.Done()
		t0 := time.Now()
		withdraw()
		fmt.Printf("WITHDRAWN %d\n", time.Since(t0).Nanoseconds())
	case "browse":
		if len(args) != 2 {
			die("browse wants the wait")
		}
		wait, err := time.ParseDuration(args[1])
		if err != nil {
			die(err.Error())
		}
		list, err := lend.Browse(context.Background(), wait)
		if err != nil {
			die(err.Error())
		}
		b, _ := json.Marshal(list)
		fmt.Printf("LIST %s\n", b)
	case "watch":
		fmt.Printf("WATCHING %d\n", time.Now().UnixNano())
		err := lend.Watch(eof, func(a lend.Announcement) {
			b, _ := json.Marshal(a)
			fmt.Printf("FOUND %d %s\n", time.Now().UnixNano(), b)
		})
		if err != nil {
			die(err.Error())
		}
	case "goodbyes":
		goodbyes(eof)
	default:
		die("unknown mode " + args[0])
	}
}

// goodbyes reads mDNS on 224.0.0.251:5353 on every multicast interface and
// prints the instances whose PTR record comes with TTL 0.
func goodbyes(ctx context.Context) {
	// A multicast address to bind: Go then sets SO_REUSEADDR, and the port
	// is shared with lend's own sockets.
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353})
	if err != nil {
		die(err.Error())
	}
	p := ipv4.NewPacketConn(c)
	ifaces, _ := net.Interfaces()
	joined := 0
	for _, ifi := range ifaces {
		if ifi.Flags&net.FlagMulticast != 0 && ifi.Flags&net.FlagUp != 0 {
			if p.JoinGroup(&ifi, &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251)}) == nil {
				joined++
			}
		}
	}
	if joined == 0 {
		die("joined 224.0.0.251 on no interface")
	}
	go func() { <-ctx.Done(); c.Close() }()
	fmt.Println("LISTENING")
	service := lend.ServiceType + ".local."
	buf := make([]byte, 9000)
	for {
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		var m dns.Msg
		if m.Unpack(buf[:n]) != nil || !m.Response {
			continue
		}
		for _, rr := range append(m.Answer, m.Extra...) {
			if ptr, ok := rr.(*dns.PTR); ok && ptr.Hdr.Name == service && ptr.Hdr.Ttl == 0 {
				fmt.Printf("GOODBYE %s\n", strings.TrimSuffix(ptr.Ptr, "."+service))
			}
		}
	}
}

func die(msg string) {
	fmt.Fprintln(os.Stderr, "lend-probe:", msg)
	os.Exit(1)
}
