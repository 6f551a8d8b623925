package supervisor

import (
	"path/filepath"
	"runtime"
)

// The supervisor reads Strata's config through internal/strataconfig (port,
// api_key, log, whether vision is on); it never writes the file.

// VenvPython is the Strata venv's python under root.
func VenvPython(root string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(root, ".venv", "Scripts", "python.exe")
	}
	return filepath.Join(root, ".venv", "bin", "python")
}
