package nvsmi

import (
	"os"
	"os/exec"
)

// Candidates lists the nvidia-smi binaries to try, in order: override
// alone when set (nothing when it cannot be found), else nvidia-smi on PATH
// (lookPath; nil: exec.LookPath), then search (nil: DefaultPaths(), the
// drivers' usual places, which a service's short PATH may lack).
func Candidates(override string, lookPath func(string) (string, error), search []string) []string {
	if override != "" && override != "nvidia-smi" {
		if isFile(override) {
			return []string{override}
		}
		if p, err := exec.LookPath(override); err == nil {
			return []string{p} // a bare program name
		}
		return nil
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	if search == nil {
		search = DefaultPaths()
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] && isFile(p) {
			seen[p] = true
			out = append(out, p)
		}
	}
	if p, err := lookPath("nvidia-smi"); err == nil {
		add(p)
	}
	for _, p := range search {
		add(p)
	}
	return out
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
