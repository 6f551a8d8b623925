// Command coldpages measures what this machine charges for touching memory
// after a long idle: for each idle time S given (seconds), it writes two
// regions of 512 pages, sleeps S, then touches the pages of the first region
// at once (a cold CPU: just woken), keeps the CPU busy for 20 ms without
// touching the second region, and touches that one (a warm CPU, pages still
// left alone for S). It prints the cost per page of both. On a desktop PC
// both stay well under 1 us per page at any S; on a VM both can grow with S,
// and an idle program's first wake-up after a long sleep pays that for every
// page of code, heap and stack it touches (bench/README.md, "Idle over
// 300 s").
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

func region() []byte {
	r := make([]byte, pages*pageSize)
	for i := range r {
		r[i] = byte(i)
	}
	return r
}

// sink takes each page's byte so the compiler keeps the reads; it is never
// read back.
//
//lint:ignore U1000 written on purpose so the page reads are not optimised away
var sink byte

// touch reads and writes one byte of every page of r; it returns the cost per
// page in microseconds.
func touch(r []byte) float64 {
	t0 := time.Now()
	for p := 0; p < pages; p++ {
		sink += r[p*pageSize]
		r[p*pageSize]++
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e3 / pages
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: coldpages SECONDS...  (idle times to try, e.g. 1 10 60 300)")
		os.Exit(2)
	}
	for _, a := range os.Args[1:] {
		s, err := strconv.Atoi(a)
		if err != nil || s < 0 {
			fmt.Fprintf(os.Stderr, "coldpages: %q is not a number of seconds\n", a)
			os.Exit(2)
		}
		first, second := region(), region()
		time.Sleep(time.Duration(s) * time.Second)
		cold := touch(first)
		var spin [64]byte
		for t0 := time.Now(); time.Since(t0) < 20*time.Millisecond; {
			spin[time.Now().Nanosecond()%64]++
		}
		warm := touch(second)
		fmt.Printf("pages left alone %4d s: %6.2f us per page just after the wake-up, %6.2f us after 20 ms of work\n", s, cold, warm)
	}
}
