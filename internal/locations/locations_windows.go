package locations

import (
	"os"
	"path/filepath"
)

// On Windows everything is under %ProgramData%\StrataCompanion; the secrets
// folder gets an administrators-and-SYSTEM-only ACL when it is created by the
// installer and the service.
func osPath(k Kind) string {
	base := os.Getenv("ProgramData")
	if base == "" {
		base = `C:\ProgramData`
	}
	root := filepath.Join(base, "StrataCompanion")
	switch k {
	case SecretsDir:
		return filepath.Join(root, "secrets")
	case LogDir:
		return filepath.Join(root, "logs")
	case StateDir:
		return filepath.Join(root, "state")
	default:
		return root
	}
}

// servicePaths: every account already gets the machine-wide folders here.
func servicePaths(k Kind) []string { return []string{Path(k)} }
