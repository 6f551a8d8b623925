package pairing

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/remotecmd"
)

// keyInstaller adds and removes our authorized_keys line on the second PC,
// in the way its OS and ssh server expect.
type keyInstaller interface {
	// install replaces any line carrying comment with line; it returns the
	// file written.
	install(ctx context.Context, c *ssh.Client, line, comment, override string) (string, error)
	// remove deletes the lines carrying comment, or pub's key (pub may be nil).
	remove(ctx context.Context, c *ssh.Client, pub ssh.PublicKey, comment, override string) error
	// path is the file install writes (an agent-only key's gate pins it,
	// so the key can remove its own line).
	path(ctx context.Context, c *ssh.Client, override string) (string, error)
}

func installer(shell, arch string, agentBin func(goos, goarch string) (string, error), remoteDir string) keyInstaller {
	if shell == "windows" {
		if agentBin != nil {
			if remoteDir == "" {
				remoteDir = prepare.DefaultRemoteDir
			}
			return agentInstaller{bin: agentBin, arch: arch, dir: remoteDir}
		}
		return windowsInstaller{}
	}
	return posixInstaller{}
}

// agentInstaller installs the key on a Windows second PC with the
// companion's own agent (strata-vision-relay.exe authorized-keys), copied
// there over sftp first: no PowerShell, ACLs set through the Windows API
// (golang.org/x/sys/windows), the line passed on stdin so cmd.exe quotes
// nothing of it.
type agentInstaller struct {
	bin       func(goos, goarch string) (string, error)
	arch, dir string
}

func (a agentInstaller) exe(ctx context.Context, c *ssh.Client) (string, error) {
	local, err := a.bin("windows", a.arch)
	if err != nil {
		return "", err
	}
	remote := remote.RemoteJoin("windows", a.dir, remote.AgentName("windows"))
	if _, err := prepare.UploadSFTP(ctx, c, local, prepare.SFTPPath("windows", remote), nil); err != nil {
		return "", fmt.Errorf("copying the companion's agent to the second PC: %w", err)
	}
	return remote, nil
}

func (a agentInstaller) install(ctx context.Context, c *ssh.Client, line, comment, override string) (string, error) {
	exe, err := a.exe(ctx, c)
	if err != nil {
		return "", err
	}
	argv := []string{exe, "authorized-keys", "add", "--comment", comment, "--line", "-"}
	if override != "" {
		argv = append(argv, "--file", override)
	}
	cmd, err := remotecmd.Quote("windows", argv)
	if err != nil {
		return "", err
	}
	return runIn(ctx, c, cmd, line+"\n")
}

func (a agentInstaller) remove(ctx context.Context, c *ssh.Client, pub ssh.PublicKey, comment, override string) error {
	exe, err := a.exe(ctx, c)
	if err != nil {
		return err
	}
	argv := []string{exe, "authorized-keys", "remove", "--comment", comment}
	if pub != nil {
		argv = append(argv, "--key", keyBlob(pub))
	}
	if override != "" {
		argv = append(argv, "--file", override)
	}
	cmd, err := remotecmd.Quote("windows", argv)
	if err != nil {
		return err
	}
	_, err = runIn(ctx, c, cmd, "")
	return err
}

func (a agentInstaller) path(ctx context.Context, c *ssh.Client, override string) (string, error) {
	exe, err := a.exe(ctx, c)
	if err != nil {
		return "", err
	}
	argv := []string{exe, "authorized-keys", "path"}
	if override != "" {
		argv = append(argv, "--file", override)
	}
	cmd, err := remotecmd.Quote("windows", argv)
	if err != nil {
		return "", err
	}
	return run(ctx, c, cmd)
}

// run runs cmd with stdout and stderr kept apart; ctx closes the session.
func run(ctx context.Context, c *ssh.Client, cmd string) (string, error) {
	return runIn(ctx, c, cmd, "")
}

// runIn is run with stdin.
func runIn(ctx context.Context, c *ssh.Client, cmd, stdin string) (string, error) {
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	sess.Stdin = strings.NewReader(stdin)
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	var out, errb bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errb
	if err := sess.Run(cmd); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return "", fmt.Errorf("%v: %s", err, msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// posixInstaller edits ~/.ssh/authorized_keys with sh and awk (present on
// every Linux and macOS): ~/.ssh is made 700 and the file 600 as sshd's
// StrictModes wants, and the new file replaces the old with a rename, so a
// dropped connection never leaves a half-written file (which could lock the
// user out).
type posixInstaller struct{}

// posixPrelude finds the file and the temp name.
const posixPrelude = `set -e
umask 077
f=%s
[ -n "$f" ] || f=.ssh/authorized_keys
case $f in /*) ;; *) f="$HOME/$f" ;; esac
d=$(dirname "$f")
if [ ! -d "$d" ]; then mkdir -p "$d"; chmod 700 "$d"; fi
tmp="$f.strata-tmp.$$"
trap 'rm -f "$tmp"' EXIT
replace() {
	if [ -L "$f" ]; then cat "$tmp" > "$f"; else chmod 600 "$tmp"; mv -f "$tmp" "$f"; fi
	if command -v restorecon >/dev/null 2>&1; then restorecon "$f" 2>/dev/null || true; fi
}
`

func (posixInstaller) install(ctx context.Context, c *ssh.Client, line, comment, override string) (string, error) {
	script := fmt.Sprintf(posixPrelude, remotecmd.POSIX(override)) + fmt.Sprintf(`
line=%s
comment=%s
if [ -f "$f" ]; then awk -v c="$comment" '$NF != c' "$f" > "$tmp"; else : > "$tmp"; fi
printf '%%s\n' "$line" >> "$tmp"
replace
echo "$f"
`, remotecmd.POSIX(line), remotecmd.POSIX(comment))
	return run(ctx, c, "sh -c "+remotecmd.POSIX(script))
}

func (posixInstaller) path(ctx context.Context, c *ssh.Client, override string) (string, error) {
	script := fmt.Sprintf(`f=%s
[ -n "$f" ] || f=.ssh/authorized_keys
case $f in /*) ;; *) f="$HOME/$f" ;; esac
printf '%%s\n' "$f"
`, remotecmd.POSIX(override))
	return run(ctx, c, "sh -c "+remotecmd.POSIX(script))
}

func (posixInstaller) remove(ctx context.Context, c *ssh.Client, pub ssh.PublicKey, comment, override string) error {
	blob := ""
	if pub != nil {
		blob = keyBlob(pub)
	}
	script := fmt.Sprintf(posixPrelude, remotecmd.POSIX(override)) + fmt.Sprintf(`
[ -f "$f" ] || exit 0
awk -v c=%s -v k=%s '{ if ($NF == c) next; if (k != "") for (i = 1; i <= NF; i++) if ($i == k) next; print }' "$f" > "$tmp"
replace
`, remotecmd.POSIX(comment), remotecmd.POSIX(blob))
	_, err := run(ctx, c, "sh -c "+remotecmd.POSIX(script))
	return err
}

// windowsInstaller edits the file Windows OpenSSH reads: for a member of
// Administrators (sshd_config's default "Match Group administrators")
// %ProgramData%\ssh\administrators_authorized_keys, which sshd accepts only
// with an ACL of Administrators and SYSTEM alone; for other users
// %USERPROFILE%\.ssh\authorized_keys, limited to the user, SYSTEM and
// Administrators. It runs as one PowerShell script passed base64-encoded
// (-EncodedCommand), so no shell quoting is involved. Files are written as
// UTF-8 without a BOM: sshd rejects UTF-16, PowerShell 5's default.
type windowsInstaller struct{}

const psPrelude = `$ErrorActionPreference = 'Stop'
$override = %s
$comment = %s
$admin = [bool]((whoami.exe /groups) -match 'S-1-5-32-544')
if ($override) { $f = $override }
elseif ($admin) { $f = Join-Path $env:ProgramData 'ssh\administrators_authorized_keys' }
else { $f = Join-Path $env:USERPROFILE '.ssh\authorized_keys' }
$d = Split-Path -Parent $f
if (-not (Test-Path -LiteralPath $d)) { New-Item -ItemType Directory -Path $d -Force | Out-Null }
$lines = @()
if (Test-Path -LiteralPath $f) { $lines = @(Get-Content -LiteralPath $f -Encoding UTF8 | Where-Object { $_ -ne '' }) }
function Save([string[]]$keep) {
	$tmp = "$f.strata-tmp"
	[IO.File]::WriteAllLines($tmp, $keep, (New-Object Text.UTF8Encoding $false))
	Move-Item -LiteralPath $tmp -Destination $f -Force
	$system = '*S-1-5-18:F'; $admins = '*S-1-5-32-544:F'
	if ($admin -and -not $override) { icacls.exe $f /inheritance:r /grant $admins /grant $system | Out-Null }
	else { $me = '*' + [Security.Principal.WindowsIdentity]::GetCurrent().User.Value + ':F'; icacls.exe $f /inheritance:r /grant $me /grant $system /grant $admins | Out-Null }
	if ($LASTEXITCODE -ne 0) { throw "icacls could not set the permissions of $f" }
}
`

func (windowsInstaller) install(ctx context.Context, c *ssh.Client, line, comment, override string) (string, error) {
	script := fmt.Sprintf(psPrelude, remotecmd.PowerShellLiteral(override), remotecmd.PowerShellLiteral(comment)) + fmt.Sprintf(`
$line = %s
$keep = @($lines | Where-Object { (($_.Trim() -split '\s+')[-1]) -ne $comment })
Save ($keep + $line)
Write-Output $f
`, remotecmd.PowerShellLiteral(line))
	return run(ctx, c, powershell(script))
}

func (windowsInstaller) path(ctx context.Context, c *ssh.Client, override string) (string, error) {
	script := fmt.Sprintf(psPrelude, remotecmd.PowerShellLiteral(override), remotecmd.PowerShellLiteral("")) + "\nWrite-Output $f\n"
	return run(ctx, c, powershell(script))
}

func (windowsInstaller) remove(ctx context.Context, c *ssh.Client, pub ssh.PublicKey, comment, override string) error {
	blob := ""
	if pub != nil {
		blob = keyBlob(pub)
	}
	script := fmt.Sprintf(psPrelude, remotecmd.PowerShellLiteral(override), remotecmd.PowerShellLiteral(comment)) + fmt.Sprintf(`
if (-not (Test-Path -LiteralPath $f)) { exit 0 }
$blob = %s
$keep = @($lines | Where-Object { $w = $_.Trim() -split '\s+'; ($w[-1] -ne $comment) -and (-not ($blob -and ($w -contains $blob))) })
Save $keep
`, remotecmd.PowerShellLiteral(blob))
	_, err := run(ctx, c, powershell(script))
	return err
}

// powershell is the command that runs script, whatever the login shell
// (cmd.exe or PowerShell): -EncodedCommand takes base64 of UTF-16LE.
func powershell(script string) string { return remotecmd.EncodedPowerShell(script) }

// keyBlob is the key's base64 field in authorized_keys.
func keyBlob(pub ssh.PublicKey) string {
	f := strings.Fields(string(ssh.MarshalAuthorizedKey(pub)))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}
