// Command coldpages measures what this machine charges for touching memory
// that has been left alone for a while: for each idle time S given (seconds),
// it writes 512 pages of a fresh region, sleeps S, touches the same pages
// again and prints the cost per page. On a desktop PC the second touch costs
// what a cache miss does (well under 1 us per page at any S); on a VM whose
// host reclaims or compresses idle guest memory it grows with S, and every
// idle program's first wake-up after a long sleep pays it for each page of
// code, heap and stack it touches (bench/README.md, "Idle over 300 s").
//
//	go run ./bench/idle/coldpages 1 10 60 300
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

const (
	pageSize = 4096
	pages    = 512
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: coldpages SECONDS...  (idle times to try, e.g. 1 10 60 300)")
		os.Exit(2)
	}
	var sink byte
	for _, a := range os.Args[1:] {
		s, err := strconv.Atoi(a)
		if err != nil || s < 0 {
			fmt.Fprintf(os.Stderr, "coldpages: %q is not a number of seconds\n", a)
			os.Exit(2)
		}
		region := make([]byte, pages*pageSize) // fresh pages for each idle time
		for i := range region {
			region[i] = byte(i)
		}
		time.Sleep(time.Duration(s) * time.Second)
		t0 := time.Now()
		for p := 0; p < pages; p++ {
			sink += region[p*pageSize]
			region[p*pageSize]++
		}
		d := time.Since(t0)
		fmt.Printf("pages left alone %4d s: %6.2f us per page on the next touch (%d pages, %v)\n", s, float64(d.Nanoseconds())/1e3/pages, pages, d)
	}
	_ = sink
}
