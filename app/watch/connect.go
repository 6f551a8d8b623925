package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/strata-companion/companion/app/internal/svcpaths"
	"github.com/strata-companion/companion/internal/controlapi"
)

// Connect makes a client from the address and token files of the running
// service, like controlapi.NewClient, but also finds a system service's
// files when the tray runs as a normal user (see svcpaths). With no address
// file anywhere it returns controlapi.ErrNotRunning itself, unwrapped.
func Connect() (*controlapi.Client, error) {
	for _, dir := range svcpaths.StateDirs() {
		addr, err := os.ReadFile(filepath.Join(dir, "control-addr"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the control API address in %s: %w", dir, err)
		}
		tokFile := filepath.Join(dir, "control-token")
		tok, err := os.ReadFile(tokFile)
		if err != nil {
			return nil, fmt.Errorf("reading the control API token %s (the service may still be starting): %w", tokFile, err)
		}
		return &controlapi.Client{
			BaseURL: "http://" + strings.TrimSpace(string(addr)),
			Token:   strings.TrimSpace(string(tok)),
			HTTP:    &http.Client{},
		}, nil
	}
	return nil, controlapi.ErrNotRunning
}
