package sshx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/kevinburke/ssh_config"
)

// HostConfig is what the user's ssh config says about one host alias: the
// prefill for the address form and the CLI.
type HostConfig struct {
	HostName      string
	User          string
	Port          int
	IdentityFiles []string // expanded (~, %d, %u, %h, %r), as written; may not exist

	alias       string
	rawIdentity []string
}

// UserSSHConfigFiles are the files ssh itself reads, in its order: the
// user's ~/.ssh/config, then the system-wide one. Only the CLI and the
// wizard (running as the user) read them; the service never does.
func UserSSHConfigFiles() []string {
	var out []string
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(home, ".ssh", "config"))
	}
	if runtime.GOOS == "windows" {
		if pd := os.Getenv("ProgramData"); pd != "" {
			out = append(out, filepath.Join(pd, "ssh", "ssh_config"))
		}
	} else {
		out = append(out, "/etc/ssh/ssh_config")
	}
	return out
}

// ReadSSHConfig looks alias up in files (first value wins, as in ssh);
// missing files are skipped. Parsing is kevinburke/ssh_config's (Host
// patterns, negation, Include), not ours.
func ReadSSHConfig(alias string, files ...string) (HostConfig, error) {
	hc := HostConfig{alias: alias}
	var cfgs []*ssh_config.Config
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return hc, fmt.Errorf("reading %s: %w", f, err)
		}
		c, err := ssh_config.DecodeBytes(b)
		if err != nil {
			return hc, fmt.Errorf("%s is not a valid ssh config (%v); fix it or enter the address in full", f, err)
		}
		cfgs = append(cfgs, c)
	}
	get := func(key string) string {
		for _, c := range cfgs {
			if v, _ := c.Get(alias, key); v != "" {
				return v
			}
		}
		return ""
	}
	hc.HostName = get("HostName")
	hc.User = get("User")
	if p := get("Port"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return hc, fmt.Errorf("the ssh config gives %q as the port of %s, which is not a port number", p, alias)
		}
		hc.Port = n
	}
	for _, c := range cfgs {
		all, _ := c.GetAll(alias, "IdentityFile")
		for _, f := range all {
			hc.rawIdentity = append(hc.rawIdentity, f)
			hc.IdentityFiles = append(hc.IdentityFiles, expandSSHPath(f, alias, hc.User))
		}
	}
	if hc.HostName != "" {
		hc.HostName = strings.ReplaceAll(hc.HostName, "%h", alias)
	}
	return hc, nil
}

// expandSSHPath expands the tokens ssh allows in IdentityFile.
func expandSSHPath(p, host, remoteUser string) string {
	home, _ := os.UserHomeDir()
	local := ""
	if u, err := user.Current(); err == nil {
		local = u.Username
	}
	if remoteUser == "" {
		remoteUser = local
	}
	p = strings.Trim(p, `"`)
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		p = home + p[1:]
	}
	r := strings.NewReplacer("%d", home, "%u", local, "%h", host, "%r", remoteUser, "%%", "%")
	return filepath.FromSlash(r.Replace(p))
}

// Resolve completes ep the way ssh would: the config's HostName replaces an
// alias, its User and Port fill what ep leaves out, and with no user at all
// the local user name is used (as ssh does). It returns the config entry too,
// for its IdentityFiles.
func Resolve(ep Endpoint, files ...string) (Endpoint, HostConfig, error) {
	hc, err := ReadSSHConfig(ep.Host, files...)
	if err != nil {
		return ep, hc, err
	}
	if hc.HostName != "" {
		ep.Host = hc.HostName
	}
	if ep.User == "" {
		ep.User = hc.User
	}
	if ep.Port == 0 {
		ep.Port = hc.Port
	}
	if ep.User == "" {
		if u, err := user.Current(); err == nil {
			ep.User = u.Username
			// Windows names come as DOMAIN\user; ssh logs in as the user.
			if i := strings.LastIndexByte(ep.User, '\\'); i >= 0 {
				ep.User = ep.User[i+1:]
			}
		}
	}
	// %r is the user actually logging in, which may not be the config's.
	hc.IdentityFiles = hc.IdentityFiles[:0]
	for _, f := range hc.rawIdentity {
		hc.IdentityFiles = append(hc.IdentityFiles, expandSSHPath(f, hc.alias, ep.User))
	}
	return ep, hc, nil
}

// DefaultIdentityFiles are the key files ssh tries when none is configured
// (those that exist).
func DefaultIdentityFiles() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		p := filepath.Join(home, ".ssh", n)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
