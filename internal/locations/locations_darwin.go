package locations

import "path/filepath"

func osPath(k Kind) string {
	root := "/Library/Application Support/StrataCompanion"
	switch k {
	case SecretsDir:
		return filepath.Join(root, "secrets")
	case LogDir:
		return "/Library/Logs/StrataCompanion"
	case StateDir:
		return filepath.Join(root, "state")
	default:
		return root
	}
}

// servicePaths: every account already gets the machine-wide folders here.
func servicePaths(k Kind) []string { return []string{Path(k)} }
