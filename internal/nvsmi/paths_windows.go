//go:build windows

package nvsmi

import (
	"os"
	"path/filepath"
)

// DefaultPaths are where NVIDIA drivers put nvidia-smi on Windows:
// System32 for modern (DCH) drivers, the NVSMI folder for old ones. The
// service's PATH may lack both.
func DefaultPaths() []string {
	sysRoot := os.Getenv("SystemRoot")
	if sysRoot == "" {
		sysRoot = `C:\Windows`
	}
	pf := os.Getenv("ProgramFiles")
	if pf == "" {
		pf = `C:\Program Files`
	}
	return []string{
		filepath.Join(sysRoot, "System32", "nvidia-smi.exe"),
		filepath.Join(pf, "NVIDIA Corporation", "NVSMI", "nvidia-smi.exe"),
		`C:\Windows\System32\nvidia-smi.exe`,
		`C:\Program Files\NVIDIA Corporation\NVSMI\nvidia-smi.exe`,
	}
}
