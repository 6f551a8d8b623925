// Command elevprobe calls desktop.Desktop.RunElevated with its arguments
// and prints what it answered (the Windows elevation under wine:
// app/desktop's TestRunElevatedUnderWine). Not shipped.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/strata-companion/companion/app/desktop"
)

func main() {
	err := desktop.Desktop{}.RunElevated(context.Background(), os.Args[1:]...)
	fmt.Printf("answer: %v\n", err)
	fmt.Printf("temp: %s\n", os.TempDir()) // where the command's words went
}
