//go:build !linux && !windows

package probe

// probeOSGPUs: on macOS and the BSDs only nvidia-smi (if any) is asked;
// Strata's encoder needs CUDA, which these systems do not have.
func probeOSGPUs(Options) ([]GPU, []Finding) { return nil, nil }
