//go:build !windows

package nvsmi

// DefaultPaths are where drivers put nvidia-smi off PATH: WSL
// mounts the Windows driver's copy here. A service's short PATH usually
// still has /usr/bin, where Linux drivers install it.
func DefaultPaths() []string {
	return []string{"/usr/lib/wsl/lib/nvidia-smi", "/usr/bin/nvidia-smi"}
}
