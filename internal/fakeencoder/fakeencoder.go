// Package fakeencoder is a stand-in for Strata's strata-vision, for machines
// without a GPU or the real encoder (tests, benchmarks, a second PC under
// test). It speaks the encoder line protocol exactly as docs/strata.md describes:
// READY <n_embd> first (n_embd from the mmproj's GGUF metadata), then one
// reply line per "ENC <image> <output>": "OK <n_tokens> <nx> <ny> <ms>" with a
// valid SVE1 file written to <output>, or "ERR <message>" for a picture it
// cannot read; QUIT or end of input ends it. Diagnostics go to stderr.
//
// The .sve content is deterministic from the picture's bytes (and the token
// count and n_embd), so a result that travelled through the relay can be
// compared byte for byte with one made locally.
//
// Knobs for tests (environment): STRATA_STANDIN_START_MS delays READY (a GPU
// warm-up), STRATA_STANDIN_ENCODE_MS adds time to each picture.
package fakeencoder

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/gguf"
)

// SVEMagic is "SVE1" read as a little-endian int32.
const SVEMagic = 0x31455653

// Grid picks nx, ny for n tokens: the most square factorisation.
func Grid(n int) (nx, ny int) {
	nx = int(math.Sqrt(float64(n)))
	for nx > 1 && n%nx != 0 {
		nx--
	}
	if nx < 1 {
		nx = 1
	}
	return nx, n / nx
}

// SVE returns the .sve bytes the stand-in writes for picture img.
func SVE(img []byte, nTokens, nEmbd int) []byte {
	nx, ny := Grid(nTokens)
	out := make([]byte, 20+4*nTokens*nEmbd)
	for i, v := range []uint32{SVEMagic, uint32(nTokens), uint32(nx), uint32(ny), uint32(nEmbd)} {
		binary.LittleEndian.PutUint32(out[4*i:], v)
	}
	sum := sha256.Sum256(img)
	s := binary.LittleEndian.Uint64(sum[:8])
	body := out[20:]
	for i := 0; i+4 <= len(body); i += 4 {
		// splitmix64: fast, and the same on every platform.
		s += 0x9e3779b97f4a7c15
		z := s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		f := float32(int32(z>>40)-(1<<23)) / (1 << 23) // in [-1, 1)
		binary.LittleEndian.PutUint32(body[i:], math.Float32bits(f))
	}
	return out
}

// PictureFormat names a picture's format from its first bytes ("" if none
// of the four Strata passes unchanged).
func PictureFormat(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(b, []byte("BM")):
		return "bmp"
	case bytes.HasPrefix(b, []byte("GIF8")):
		return "gif"
	}
	return ""
}

// WriteMmproj writes a minimal mmproj GGUF whose projection_dim is nEmbd.
func WriteMmproj(path string, nEmbd int) error {
	var buf bytes.Buffer
	err := gguf.Write(&buf, []gguf.KV{
		gguf.String("general.architecture", "clip"),
		gguf.Uint32(gguf.ProjectionDimKey, uint32(nEmbd)),
	}, []gguf.Tensor{{Name: "mm.0.weight", Dims: []uint64{4}, Type: 0}}, 32, func(gguf.Tensor) uint64 { return 16 })
	if err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// WriteModel writes a minimal text-model GGUF with a vocabulary of n tokens.
func WriteModel(path string, n int) error {
	toks := make([]string, n)
	for i := range toks {
		toks[i] = "t" + strconv.Itoa(i)
	}
	var buf bytes.Buffer
	err := gguf.Write(&buf, []gguf.KV{
		gguf.String("general.architecture", "qwen3moe"),
		gguf.Strings("tokenizer.ggml.tokens", toks),
	}, []gguf.Tensor{{Name: "token_embd.weight", Dims: []uint64{8, uint64(n)}, Type: 0}}, 32,
		func(gguf.Tensor) uint64 { return uint64(32 * n) })
	if err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func envMS(name string) time.Duration {
	n, _ := strconv.Atoi(os.Getenv(name))
	return time.Duration(n) * time.Millisecond
}

// Run is the stand-in's main: it returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("strata-vision", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mmproj := fs.String("mmproj", "", "vision projector GGUF")
	model := fs.String("model", "", "text model shard 1 or vocabulary stub (opened vocab-only)")
	gpu := fs.Bool("gpu", false, "GPU encoder")
	threads := fs.Int("threads", 0, "CPU threads")
	maxTokens := fs.Int("max-tokens", 0, "image tokens per picture")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	out := bufio.NewWriter(stdout)
	fail := func(msg string) int {
		// The first line is what Strata shows in "the vision encoder did not start: <line>".
		fmt.Fprintln(out, "error: "+msg)
		out.Flush()
		fmt.Fprintln(stderr, "strata-vision: "+msg)
		return 1
	}
	if *mmproj == "" || *model == "" {
		return fail("--mmproj and --model are required")
	}
	nEmbd, err := gguf.NEmbd(*mmproj)
	if err != nil {
		return fail("cannot load the vision projector: " + err.Error())
	}
	if _, err := gguf.ReadFile(*model); err != nil {
		return fail("cannot load the vocabulary: " + err.Error())
	}
	n := *maxTokens
	if n <= 0 {
		n = 300
		if *gpu {
			n = 1024
		}
	}
	time.Sleep(envMS("STRATA_STANDIN_START_MS"))
	if *gpu {
		fmt.Fprintf(stderr, "strata-vision: warmed up at %d image tokens\n", n)
	} else {
		if *threads <= 0 {
			*threads = 4
		}
		fmt.Fprintf(stderr, "strata-vision: on the CPU, %d threads, no warm-up\n", *threads)
	}
	fmt.Fprintf(out, "READY %d\n", nEmbd)
	out.Flush()
	nx, ny := Grid(n)
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 1 && f[0] == "QUIT":
			return 0
		case len(f) == 3 && f[0] == "ENC":
			t0 := time.Now()
			img, err := os.ReadFile(f[1])
			switch {
			case err != nil:
				fmt.Fprintf(out, "ERR cannot read %s: %v\n", f[1], err)
			case PictureFormat(img) == "":
				fmt.Fprintf(out, "ERR %s is not a JPEG, PNG, BMP or GIF picture\n", f[1])
			default:
				time.Sleep(envMS("STRATA_STANDIN_ENCODE_MS"))
				if err := os.WriteFile(f[2], SVE(img, n, nEmbd), 0o644); err != nil {
					fmt.Fprintf(out, "ERR cannot write %s: %v\n", f[2], err)
					break
				}
				fmt.Fprintf(out, "OK %d %d %d %d\n", n, nx, ny, time.Since(t0).Milliseconds())
			}
		default:
			fmt.Fprintf(out, "ERR unknown request %q\n", in.Text())
		}
		out.Flush()
	}
	return 0
}
