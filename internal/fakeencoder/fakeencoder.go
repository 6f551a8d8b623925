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
// It behaves per device as Strata's tools/vision/strata_vision.cpp does:
//   - arguments: --mmproj, --model, --gpu, --threads N, --max-tokens N and
//     --flash-attn on|off|auto; any other is "unknown argument X" on stderr
//     and exit 2 (a server that passes a newer argument to an older encoder
//     sees it fail to start); a flag without its value is "X needs a value",
//     exit 2; no --mmproj or --model prints the usage, exit 2;
//   - the text model is opened first ("ERR cannot open the text model X",
//     exit 1), then the projector ("ERR cannot load the vision encoder X",
//     exit 1): the first stdout line is what Strata shows;
//   - on the CPU (no --gpu) it prints "strata-vision: on the CPU, N threads,
//     no warm-up" (N: --threads, else half the cores) and each picture takes
//     time growing with its image tokens and falling with the threads;
//   - with --gpu it looks for a GPU the way the CUDA runtime sees one: the
//     nvidia-smi on its PATH (in tests the stand-in nvidia-smi, which knows
//     the GPUs of the PC it plays), narrowed by CUDA_VISIBLE_DEVICES. With a
//     GPU it warms up at its largest picture before READY, prints
//     "strata-vision: warmed up at N image tokens", holds GPUVRAMMiB of that
//     GPU from then on (a claim file beside that nvidia-smi, which adds it to
//     the memory it reports while this process lives), and reads pictures
//     about ten times faster than on 8 CPU threads. Without one, as a CUDA
//     build of llama.cpp does, it prints ggml's "failed to initialize CUDA"
//     line, and mtmd carries on on the CPU: the warm-up and every picture take
//     CPU time, and the warm-up line is printed all the same (the encoder's
//     code prints it on the --gpu path whatever ran it). Only that CUDA line
//     and the time tell a wrapper that no GPU read the picture.
//
// Extra time for tests (environment): STRATA_STANDIN_START_MS delays READY,
// STRATA_STANDIN_ENCODE_MS adds time to each picture; for benchmarks of the
// transport, STRATA_STANDIN_NO_DEVICE_TIME=1 leaves out the modelled device
// time (warm-up and per picture).
package fakeencoder

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/gguf"
	"github.com/strata-companion/companion/internal/nvsmi"
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

// GPUVRAMMiB is what a GPU encoder holds from its warm-up on (docs/strata.md:
// 1383 MiB measured on the reference machine).
const GPUVRAMMiB = 1383

// CUDAInitFailed is the line ggml's CUDA backend prints when it finds no
// device; the encoder then runs on the CPU.
const CUDAInitFailed = "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected"

// ClaimsDir is the folder beside nvidia-smi where a GPU encoder records the
// VRAM it holds (one file per process: "<gpu index> <MiB>"), so that the
// stand-in nvidia-smi reports it as used.
const ClaimsDir = "nvidia-smi.claims"

// Per-picture time of the stand-in (scaled down from docs/strata.md's reference
// figures, keeping their ratio: 15.3 s on 8 CPU threads against 1.6 s on a
// GPU at 1024 image tokens): on the CPU cpuMSPerToken x tokens / threads, on a
// GPU gpuTokensPerMS tokens per ms; a GPU warm-up costs gpuContextMS plus one
// picture at the largest size.
const (
	cpuMSPerToken  = 2
	gpuTokensPerMS = 40
	gpuContextMS   = 150
)

func envMS(name string) time.Duration {
	n, _ := strconv.Atoi(os.Getenv(name))
	return time.Duration(n) * time.Millisecond
}

// device is where the stand-in reads pictures.
type device struct {
	gpu     bool   // a GPU reads them
	index   int    // its nvidia-smi index
	smiDir  string // the folder of the nvidia-smi that showed it
	threads int    // CPU threads when !gpu
}

func (d device) pictureTime(tokens int) time.Duration {
	if os.Getenv("STRATA_STANDIN_NO_DEVICE_TIME") == "1" {
		return 0
	}
	if d.gpu {
		return time.Duration(tokens) * time.Millisecond / gpuTokensPerMS
	}
	return time.Duration(cpuMSPerToken*tokens) * time.Millisecond / time.Duration(max(1, d.threads))
}

// findGPU returns the GPU a CUDA program would use: the first one nvidia-smi
// lists among those CUDA_VISIBLE_DEVICES leaves visible.
func findGPU() (index int, smiDir string, ok bool) {
	smi, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return 0, "", false
	}
	out, err := exec.Command(smi, strings.Fields(nvsmi.BasicQueryArgs)...).Output()
	if err != nil {
		return 0, "", false
	}
	gpus, _, _ := nvsmi.Parse(out)
	var have []int
	for _, g := range gpus {
		have = append(have, g.Index)
	}
	visible := have
	if v, set := os.LookupEnv("CUDA_VISIBLE_DEVICES"); set {
		visible = nil
		for _, x := range strings.Split(v, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(x))
			if err != nil || i < 0 {
				break // CUDA stops at the first invalid entry
			}
			for _, h := range have {
				if h == i {
					visible = append(visible, i)
				}
			}
		}
	}
	if len(visible) == 0 {
		return 0, "", false
	}
	return visible[0], filepath.Dir(smi), true
}

// claimVRAM records the VRAM this process holds; the returned func drops it.
func claimVRAM(d device) func() {
	dir := filepath.Join(d.smiDir, ClaimsDir)
	if os.MkdirAll(dir, 0o777) != nil {
		return func() {}
	}
	f := filepath.Join(dir, strconv.Itoa(os.Getpid()))
	if os.WriteFile(f, []byte(fmt.Sprintf("%d %d\n", d.index, GPUVRAMMiB)), 0o666) != nil {
		return func() {}
	}
	return func() { os.Remove(f) }
}

const usageLine = "usage: strata-vision --mmproj <mmproj.gguf> --model <model.gguf> [--gpu] [--threads N] [--max-tokens N] [--flash-attn on|off|auto]"

// Run is the stand-in's main: it returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var mmproj, model string
	gpu := false
	threads, maxTokens := 0, 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, bool) {
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "%s needs a value\n", a)
				return "", false
			}
			i++
			return args[i], true
		}
		var ok = true
		var v string
		switch a {
		case "--mmproj":
			mmproj, ok = next()
		case "--model":
			model, ok = next()
		case "--gpu":
			gpu = true
		case "--threads":
			v, ok = next()
			threads, _ = strconv.Atoi(v)
		case "--max-tokens":
			v, ok = next()
			maxTokens, _ = strconv.Atoi(v)
		case "--flash-attn":
			_, ok = next() // on, off, auto: any other value is auto
		default:
			fmt.Fprintf(stderr, "unknown argument %s\n", a)
			return 2
		}
		if !ok {
			return 2
		}
	}
	if mmproj == "" || model == "" {
		fmt.Fprintln(stderr, usageLine)
		return 2
	}
	out := bufio.NewWriter(stdout)
	fail := func(msg string) int {
		// The first line is what Strata shows in "the vision encoder did not start: <line>".
		fmt.Fprintln(out, "ERR "+msg)
		out.Flush()
		return 1
	}
	if _, err := gguf.ReadFile(model); err != nil {
		return fail("cannot open the text model " + model)
	}
	nEmbd, err := gguf.NEmbd(mmproj)
	if err != nil {
		return fail("cannot load the vision encoder " + mmproj)
	}
	n := maxTokens
	if n <= 0 {
		n = 300
		if gpu {
			n = 1024
		}
	}
	d := device{threads: threads}
	if gpu {
		var ok bool
		if d.index, d.smiDir, ok = findGPU(); ok {
			d.gpu = true
		} else {
			fmt.Fprintln(stderr, CUDAInitFailed)
		}
	}
	if !d.gpu && d.threads <= 0 {
		// The encoder's default on the CPU: one thread per core pair.
		d.threads = max(1, runtime.NumCPU()/2)
	}
	time.Sleep(envMS("STRATA_STANDIN_START_MS"))
	if gpu {
		if d.gpu {
			defer claimVRAM(d)()
			if d.pictureTime(1) > 0 {
				time.Sleep(gpuContextMS * time.Millisecond)
			}
		}
		time.Sleep(d.pictureTime(n)) // the warm-up picture, on whatever runs it
		fmt.Fprintf(stderr, "strata-vision: warmed up at %d image tokens\n", n)
	} else {
		fmt.Fprintf(stderr, "strata-vision: on the CPU, %d threads, no warm-up\n", d.threads)
	}
	fmt.Fprintf(out, "READY %d\n", nEmbd)
	out.Flush()
	nx, ny := Grid(n)
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for in.Scan() {
		line := strings.TrimRight(in.Text(), "\r\n")
		if line == "QUIT" {
			return 0
		}
		img, outPath, ok := parseENC(line)
		if !ok {
			fmt.Fprintln(out, "ERR expected: ENC <image> <output>")
			out.Flush()
			continue
		}
		t0 := time.Now()
		data, err := os.ReadFile(img)
		switch {
		case err != nil || PictureFormat(data) == "":
			fmt.Fprintf(out, "ERR cannot read the image %s\n", img)
		default:
			time.Sleep(d.pictureTime(n) + envMS("STRATA_STANDIN_ENCODE_MS"))
			if err := os.WriteFile(outPath, SVE(data, n, nEmbd), 0o644); err != nil {
				fmt.Fprintf(out, "ERR cannot write %s\n", outPath)
				break
			}
			fmt.Fprintf(out, "OK %d %d %d %d\n", n, nx, ny, time.Since(t0).Milliseconds())
		}
		out.Flush()
	}
	return 0
}

// parseENC splits "ENC <image> <out>" as the encoder does: the image path
// ends at the last space before the output path.
func parseENC(line string) (img, out string, ok bool) {
	rest, found := strings.CutPrefix(line, "ENC ")
	if !found {
		return "", "", false
	}
	sp := strings.LastIndexByte(rest, ' ')
	if sp <= 0 {
		return "", "", false
	}
	img, out = rest[:sp], rest[sp+1:]
	return img, out, img != "" && out != ""
}
