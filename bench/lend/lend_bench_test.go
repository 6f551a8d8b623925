//go:build linux

// Package lendbench measures how soon `remote find` lists a lender: the
// time from a lender's Announce to the first listing by a browser on
// another PC, on a testenv.LAN (three namespaces on a bridge; nothing on
// this machine's own network). Two cases:
//
//   - BenchmarkAnnounceToListing: the browser is already watching when the
//     lender starts (the lender's unsolicited announcement, sent after
//     zeroconf's three probes, is what it hears);
//   - BenchmarkBrowseToListing: the lender is up and a browser starts (its
//     query at start and the lender's answer): what `remote find` shows.
//
// Each iteration starts lend-probe processes; the figure is the
// "ms-to-listing" metric (mean, with the slowest as "max-ms"), from one
// clock shared by the namespaces, not ns/op. Run: bench/lend/run.sh (root).
package lendbench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-companion/companion/internal/lend"
	"github.com/strata-companion/companion/internal/testenv"
)

func lender(i int) lend.Announcement {
	return lend.Announcement{
		Name:         fmt.Sprintf("bench-%d", i),
		Port:         22,
		PairPort:     47001,
		GPUs:         []lend.GPU{{Name: "NVIDIA GeForce RTX 4070 Laptop GPU", TotalMiB: 8188}},
		AgentVersion: "0.1.0-dev",
		HostKey:      "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
		OS:           "windows",
	}
}

// found waits for the watcher's listing of name and returns its time.
func found(b *testing.B, w *testenv.LendProbe, name string) int64 {
	for {
		rest := w.Expect("FOUND", 30*time.Second)
		at, js, _ := strings.Cut(rest, " ")
		var a lend.Announcement
		if json.Unmarshal([]byte(js), &a) == nil && a.Name == name {
			var ns int64
			fmt.Sscan(at, &ns)
			return ns
		}
	}
}

func report(b *testing.B, d []time.Duration) {
	var sum, max time.Duration
	for _, x := range d {
		sum += x
		if x > max {
			max = x
		}
	}
	b.ReportMetric(float64(sum.Microseconds())/1000/float64(len(d)), "ms-to-listing")
	b.ReportMetric(float64(max.Microseconds())/1000, "max-ms")
}

func BenchmarkAnnounceToListing(b *testing.B) {
	if testing.Short() {
		b.Skip("makes a LAN of namespaces")
	}
	lan := testenv.NewLAN(b, 2)
	w := testenv.StartLendProbe(b, lan.Hosts[0], "watch")
	w.Expect("WATCHING", 30*time.Second)
	var d []time.Duration
	for i := 0; i < b.N; i++ {
		a := lender(i)
		js, _ := json.Marshal(a)
		l := testenv.StartLendProbe(b, lan.Hosts[1], "announce", string(js))
		var start int64
		fmt.Sscan(l.Expect("ANNOUNCED", 30*time.Second), &start)
		d = append(d, time.Duration(found(b, w, a.Name)-start))
		l.CloseInput()
		l.Expect("WITHDRAWN", 10*time.Second)
	}
	report(b, d)
}

func BenchmarkBrowseToListing(b *testing.B) {
	if testing.Short() {
		b.Skip("makes a LAN of namespaces")
	}
	lan := testenv.NewLAN(b, 2)
	a := lender(0)
	js, _ := json.Marshal(a)
	testenv.StartLendProbe(b, lan.Hosts[1], "announce", string(js)).Expect("ANNOUNCED", 30*time.Second)
	var d []time.Duration
	for i := 0; i < b.N; i++ {
		w := testenv.StartLendProbe(b, lan.Hosts[0], "watch")
		var start int64
		fmt.Sscan(w.Expect("WATCHING", 30*time.Second), &start)
		d = append(d, time.Duration(found(b, w, a.Name)-start))
		w.CloseInput()
	}
	report(b, d)
}
