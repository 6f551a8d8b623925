// Command strata-vision-relay is the image encoder Strata starts when vision
// runs on a second PC: it speaks Strata's encoder line protocol on
// stdin/stdout and does the work on the other PC over one kept-alive ssh
// connection. On the second PC the same binary runs as the agent
// ("strata-vision-relay agent") next to the real strata-vision.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/strata-companion/companion/internal/version"
)

const usage = `strata-vision-relay %s: Strata's image encoder, with the work done on a second PC.

Strata starts it as its vision "exe":
  strata-vision-relay --mmproj FILE --model FILE [--gpu] [--threads N] [--max-tokens N]
It answers READY at once, then each "ENC <image> <output>" line with "OK ..." or "ERR <reason>".
The second PC's settings come from the companion settings named by STRATA_COMPANION_HOME.

On the second PC:
  strata-vision-relay agent [flags]    serve one relay over this ssh session (started by the relay)

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "agent" {
		fmt.Fprintln(stderr, "strata-vision-relay agent: not yet available in this build")
		return 1
	}
	fs := flag.NewFlagSet("strata-vision-relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.String("mmproj", "", "the vision projector GGUF (as Strata passes it)")
	fs.String("model", "", "the text model shard 1 or vocabulary stub (as Strata passes it)")
	fs.Bool("gpu", false, "run the encoder on the second PC's GPU")
	fs.Int("threads", 0, "CPU encoder threads on the second PC")
	fs.Int("max-tokens", 0, "image tokens per picture")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), usage, version.Version)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return 2
	}
	fmt.Fprintln(stderr, "strata-vision-relay: the relay is not yet available in this build")
	return 1
}
