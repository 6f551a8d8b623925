package probe

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/strata-companion/companion/internal/nvsmi"
)

// Strata's requirements (docs/strata.md): NVIDIA driver 580 or newer (525 for the
// CUDA 12 build), an RTX 20 series card or newer (compute capability 7.5).
const (
	MinDriver       = 580
	MinDriverCUDA12 = 525
	MinComputeCap   = "7.5"
)

// DriverMajor reads the major version of an nvidia-smi driver version
// ("581.57" gives 581); 0 when unknown.
func DriverMajor(v string) int {
	maj, _, _ := strings.Cut(strings.TrimSpace(v), ".")
	n, err := strconv.Atoi(maj)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ccValue turns "8.9" into 89; 0 when unknown.
func ccValue(cc string) int {
	a, b, ok := strings.Cut(cc, ".")
	if !ok {
		return 0
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || y > 9 {
		return 0
	}
	return x*10 + y
}

var (
	// Data-centre and workstation cards from Turing on, named without "RTX".
	newNameRE = regexp.MustCompile(`\b(T\d{1,4}|A\d{1,4}G?|H\d{2,3}|L\d{1,2}S?|B\d{2,3}A?|G[BH]\d{2,3})\b`)
	// Names that are older than Turing for sure.
	oldNameRE = regexp.MustCompile(`\b(GTX|GT|MX\d{2,3}|TITAN (X|XP|V|BLACK|Z)|QUADRO [KMP]\d*|TESLA [KMPV]\d*|[KMPV]\d{2,3})\b`)
)

// ArchSupported says whether g is an RTX 20 series (Turing) card or newer:
// by compute capability when nvidia-smi told it, else by name. known is
// false when neither settles it.
func ArchSupported(g GPU) (ok, known bool) {
	if g.Vendor != VendorNVIDIA {
		return false, true
	}
	if v := ccValue(g.ComputeCap); v > 0 {
		return v >= ccValue(MinComputeCap), true
	}
	n := strings.ToUpper(g.Name)
	switch {
	case strings.Contains(n, "RTX"):
		return true, true
	case oldNameRE.MatchString(n):
		return false, true
	case newNameRE.MatchString(n):
		return true, true
	}
	return false, false
}

// Usable says whether Strata's GPU encoder can run on g: an NVIDIA card,
// not known to be older than RTX 20, with a driver not known to be older
// than 525, and not split into MIG slices (the encoder would get one
// slice, not the card its total names).
func Usable(g GPU) bool {
	if g.Vendor != VendorNVIDIA || g.Source != SourceNvidiaSMI || g.MIG == nvsmi.MIGEnabled {
		return false
	}
	if ok, known := ArchSupported(g); known && !ok {
		return false
	}
	if d := DriverMajor(g.Driver); d > 0 && d < MinDriverCUDA12 {
		return false
	}
	return true
}

// CheckRequirements warns about every NVIDIA GPU that misses Strata's
// requirements, and says what AMD and Intel cards mean for Strata.
func CheckRequirements(gpus []GPU) []Finding {
	var out []Finding
	driverSaid := map[string]bool{}
	for _, g := range gpus {
		label := fmt.Sprintf("GPU %d (%s)", g.Index, displayName(g))
		switch g.Vendor {
		case VendorNVIDIA:
			if g.Source != SourceNvidiaSMI {
				continue // listed by the OS only; the nvidia-smi finding covers it
			}
			if g.MIG == nvsmi.MIGEnabled {
				what, fix := nvsmi.MIGWords(nvsmi.GPU{Index: g.Index, Name: g.Name}, "")
				out = append(out, Finding{SeverityWarning, what, fix})
			}
			if ok, known := ArchSupported(g); known && !ok {
				why := "by its name"
				if g.ComputeCap != "" {
					why = "compute capability " + g.ComputeCap
				}
				out = append(out, Finding{SeverityError,
					label + " is older than Strata supports (" + why + "; Strata needs an RTX 20 series card or newer, compute capability 7.5+)",
					"read pictures on the CPU or on a second PC with a newer card; this GPU cannot run Strata's encoder"})
			} else if !known {
				out = append(out, Finding{SeverityWarning,
					label + ": could not tell whether it is an RTX 20 series card or newer (nvidia-smi did not report its compute capability)",
					"Strata needs compute capability 7.5 or higher; check the card's specification, and update the driver so nvidia-smi reports it"})
			}
			d := DriverMajor(g.Driver)
			if driverSaid[g.Driver] || d == 0 {
				continue
			}
			driverSaid[g.Driver] = true
			switch {
			case d < MinDriverCUDA12:
				out = append(out, Finding{SeverityError,
					fmt.Sprintf("the NVIDIA driver %s is too old for Strata (it needs %d or newer; %d for its CUDA 12 build)", g.Driver, MinDriver, MinDriverCUDA12),
					fmt.Sprintf("install NVIDIA driver %d or newer and restart the PC", MinDriver)})
			case d < MinDriver:
				out = append(out, Finding{SeverityWarning,
					fmt.Sprintf("the NVIDIA driver %s runs only Strata's CUDA 12 build (the standard build needs %d or newer)", g.Driver, MinDriver),
					fmt.Sprintf("install NVIDIA driver %d or newer, or use Strata's CUDA 12 build", MinDriver)})
			}
		case VendorAMD:
			out = append(out, Finding{SeverityInfo,
				label + " is an AMD card: Strata's image encoder runs on the CPU with AMD on Linux, and not at all with AMD on Windows",
				"pictures can be read on the CPU (Linux) or on a second PC with an NVIDIA card"})
		}
	}
	return out
}

func displayName(g GPU) string {
	if g.Name != "" {
		return g.Name
	}
	return g.Vendor + " GPU, name not reported"
}
