// Command nvidia-smi-standin answers the GPU query as a driver with one RTX
// 3060 Laptop GPU would (docs/strata.md's second PC), and rejects anything else as
// a real nvidia-smi does. Built as nvidia-smi.exe into the Windows test PC's
// C:\Windows\System32, where modern drivers put the real one.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "--query-gpu=") {
			fmt.Println("0, NVIDIA GeForce RTX 3060 Laptop GPU, 6144, 412, 5606, 581.57, 8.6, Disabled")
			return
		}
	}
	fmt.Fprintf(os.Stderr, "unexpected arguments: %s\n", strings.Join(os.Args[1:], " "))
	os.Exit(2)
}
