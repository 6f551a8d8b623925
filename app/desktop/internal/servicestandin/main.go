// Command servicestandin plays strata-service for elevprobe under wine:
// "ok FILE" writes FILE and exits 0; "fail" says why as strata-service does
// and exits 1. Not shipped.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("... a step")
	switch {
	case len(os.Args) == 4 && os.Args[2] == "ok":
		if err := os.WriteFile(os.Args[3], []byte("ran elevated\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "strata-service lend: ", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "strata-service lend code: this PC is not lending its GPU")
		os.Exit(1)
	}
}
