package agent

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// AuthorizedKeys is the agent's `authorized-keys` subcommand: pairing uses
// it on a Windows second PC (where sh and awk are missing and PowerShell
// would be the only other way) to add or remove the companion's line in the
// file Windows' OpenSSH reads, with the ACL sshd insists on:
//
//	authorized-keys add    --comment C --line LINE|- [--file F]
//	authorized-keys remove --comment C [--key BLOB] [--file F]
//	authorized-keys path   [--file F]      (prints the file add would write)
//	authorized-keys acl    --file F        (prints the file's ACL as SDDL)
//	authorized-keys acl-plan [--file admin] (the ACL add/remove would set, as SDDL)
//
// Without --file: for a member of Administrators (Windows OpenSSH's default
// `Match Group administrators`) %ProgramData%\ssh\administrators_authorized_keys,
// with inheritance off and only Administrators and SYSTEM; for others
// %USERPROFILE%\.ssh\authorized_keys, limited to the user, SYSTEM and
// Administrators (elsewhere ~/.ssh/authorized_keys, mode 600). Other lines
// stay byte for byte; the new file replaces the old by rename. It prints the
// file written.
func AuthorizedKeys(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: authorized-keys add|remove|acl [flags]")
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("authorized-keys "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	comment := fs.String("comment", "", "the comment that names our lines")
	line := fs.String("line", "", "the line to add (- reads it from stdin: no quoting through cmd.exe)")
	key := fs.String("key", "", "also remove lines holding this key (base64 field)")
	file := fs.String("file", "", "the authorized_keys file (default: the one sshd reads for this login)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if verb == "acl-plan" {
		s, err := planACL(*file == "admin")
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintln(stdout, s)
		return 0
	}
	if verb == "path" {
		path := *file
		if path == "" {
			var err error
			if path, _, err = defaultKeysFile(); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
		}
		fmt.Fprintln(stdout, path)
		return 0
	}
	if verb == "acl" {
		s, err := describeACL(*file)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintln(stdout, s)
		return 0
	}
	if *line == "-" {
		b, _ := io.ReadAll(io.LimitReader(stdin, 64<<10))
		*line = strings.TrimSpace(string(b))
	}
	if strings.ContainsAny(*line, "\r\n") {
		fmt.Fprintln(stderr, "the line to add must be one line")
		return 2
	}
	if *comment == "" || (verb == "add" && *line == "") || (verb != "add" && verb != "remove") {
		fmt.Fprintln(stderr, "usage: authorized-keys add --comment C --line LINE | remove --comment C [--key BLOB]")
		return 2
	}
	path, admin := *file, false
	if path == "" {
		var err error
		if path, admin, err = defaultKeysFile(); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		fmt.Fprintf(stderr, "reading %s: %v\n", path, err)
		return 1
	}
	if verb == "remove" && os.IsNotExist(err) {
		fmt.Fprintln(stdout, path)
		return 0
	}
	out := FilterKeys(old, *comment, *key)
	if verb == "add" {
		nl := "\n"
		if bytes.Contains(old, []byte("\r\n")) {
			nl = "\r\n"
		}
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, nl...)
		}
		out = append(out, *line+nl...)
	}
	if err := rewriteKeys(path, out, admin && *file == ""); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// rewriteKeys replaces the authorized_keys file path with data: a temporary
// file beside it, given the permissions sshd insists on (admin: the
// administrators' file), then renamed over it.
func rewriteKeys(path string, data []byte, admin bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".strata-tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := restrictKeysFile(tmp, admin); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("setting the permissions of %s: %v", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// keysFileIsAdmins: path is the administrators' file this login's sshd
// reads by default (Windows: for a member of Administrators).
func keysFileIsAdmins(path string) bool {
	def, admin, err := defaultKeysFile()
	return err == nil && admin && strings.EqualFold(filepath.Clean(def), filepath.Clean(path))
}

// FilterKeys drops the lines whose last field is comment or that hold key
// (when not ""); every other line is kept byte for byte, line ending included.
func FilterKeys(data []byte, comment, key string) []byte {
	return filterLines(data, func(l string) bool {
		f := strings.Fields(l)
		drop := len(f) > 0 && f[len(f)-1] == comment
		if key != "" {
			for _, w := range f {
				if w == key {
					drop = true
				}
			}
		}
		return drop
	})
}

// filterLines drops the lines drop says to (it gets the line without its
// ending); every other line is kept byte for byte, line ending included.
func filterLines(data []byte, drop func(line string) bool) []byte {
	var out []byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var l []byte
		if i < 0 {
			l, data = data, nil
		} else {
			l, data = data[:i+1], data[i+1:]
		}
		if !drop(strings.TrimRight(string(l), "\r\n")) {
			out = append(out, l...)
		}
	}
	return out
}
