package relay

import (
	"context"
	"io"

	"golang.org/x/crypto/ssh"

	"github.com/strata-companion/companion/internal/framing"
	"github.com/strata-companion/companion/internal/relay/prepare"
	"github.com/strata-companion/companion/internal/relay/remote"
	"github.com/strata-companion/companion/internal/settings"
)

// The second PC's transport, the agent's command line and its encoder's
// device live in internal/relay/remote; preparing the second PC in
// internal/relay/prepare. Their names are re-exported here, so callers of
// relay.X keep working; the code is there.

type (
	// Conn is one connection to the second PC that can start agent sessions.
	Conn = remote.Conn
	// Proc is a command running on the second PC.
	Proc = remote.Proc
	// Dialer opens a connection within the timeout.
	Dialer = remote.Dialer
	// AgentArgs are the agent's settings for one relay.
	AgentArgs = remote.AgentArgs
	// Device is where an encoder the relay starts reads pictures, and with what.
	Device = remote.Device
	// PrepareOptions say what `strata-service remote prepare` puts on the second PC.
	PrepareOptions = prepare.Options
	// PrepareResult is what the settings should remember.
	PrepareResult = prepare.Result
)

// Image tokens per picture when the user chose none (remote.GPUMaxTokens).
const (
	GPUMaxTokens = remote.GPUMaxTokens
	CPUMaxTokens = remote.CPUMaxTokens
)

const (
	// DefaultRemoteDir is the folder (under the login's home) used when the
	// settings name none.
	DefaultRemoteDir = prepare.DefaultRemoteDir
	// SelfName asks the agent about its own executable.
	SelfName = prepare.SelfName
)

// SSHDialer dials the second PC of r (remote.SSHDialer).
func SSHDialer(r settings.Remote) Dialer { return remote.SSHDialer(r) }

// NewSSHConn wraps an ssh client already dialed (remote.NewSSHConn).
func NewSSHConn(c *ssh.Client) Conn { return remote.NewSSHConn(c) }

// SSHClient is the ssh connection under a Conn (remote.SSHClient).
func SSHClient(c Conn) *ssh.Client { return remote.SSHClient(c) }

// AgentName is the relay's file name on a second PC of that OS.
func AgentName(goos string) string { return remote.AgentName(goos) }

// RemoteOS guesses the second PC's OS when the settings do not say.
func RemoteOS(settingsOS, remoteDir string) string { return remote.RemoteOS(settingsOS, remoteDir) }

// RemoteJoin joins a file name to a folder on the second PC.
func RemoteJoin(goos, dir, name string) string { return remote.RemoteJoin(goos, dir, name) }

// AgentArgsFor is the agent's settings for the second PC in r (remote.AgentArgsFor).
func AgentArgsFor(r settings.Remote, mmproj, model string, extra []string) AgentArgs {
	return remote.AgentArgsFor(r, mmproj, model, extra)
}

// RemoteFiles names the mmproj and vocabulary stub on the second PC.
func RemoteFiles(localMmproj, localModel string) (mmproj, model string) {
	return remote.RemoteFiles(localMmproj, localModel)
}

// QuoteCommand quotes argv for goos's login shell.
func QuoteCommand(goos string, argv []string) (string, error) { return remote.QuoteCommand(goos, argv) }

// RemoteDevice decides the second PC's encoder device (remote.RemoteDevice).
func RemoteDevice(rm settings.Remote) Device { return remote.RemoteDevice(rm) }

// Prepare puts what the relay needs on the second PC (prepare.Prepare).
func Prepare(ctx context.Context, o PrepareOptions) (*PrepareResult, error) {
	return prepare.Prepare(ctx, o)
}

// InstallSums are the sha256 sums of what prepare installs for this PC's
// strata-vision (prepare.InstallSums).
func InstallSums(localEncoder string) ([]string, error) { return prepare.InstallSums(localEncoder) }

// InstallAgent copies the agent build bin into dir on the second PC over c
// (prepare.InstallAgent).
func InstallAgent(ctx context.Context, c *ssh.Client, goos, dir, bin string) (string, error) {
	return prepare.InstallAgent(ctx, c, goos, dir, bin)
}

// UploadSFTP copies local to remote over c's sftp subsystem (prepare.UploadSFTP).
func UploadSFTP(ctx context.Context, c *ssh.Client, local, remotePath string, out io.Writer) (bool, error) {
	return prepare.UploadSFTP(ctx, c, local, remotePath, out)
}

// SFTPPath is a second-PC path as its sftp server names it (prepare.SFTPPath).
func SFTPPath(goos, p string) string { return prepare.SFTPPath(goos, p) }

// RemoteGPUs are gs as the settings record them (prepare.RemoteGPUs).
func RemoteGPUs(gs []framing.GPU) []settings.RemoteGPU { return prepare.RemoteGPUs(gs) }
