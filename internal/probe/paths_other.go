//go:build !windows

package probe

// DefaultNvidiaSMIPaths are where drivers put nvidia-smi off PATH: WSL
// mounts the Windows driver's copy here. A service's short PATH usually
// still has /usr/bin, where Linux drivers install it.
func DefaultNvidiaSMIPaths() []string {
	return []string{"/usr/lib/wsl/lib/nvidia-smi", "/usr/bin/nvidia-smi"}
}
