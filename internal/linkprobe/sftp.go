package linkprobe

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pkg/sftp"

	"github.com/strata-companion/companion/internal/probe"
)

// throughputSFTP measures both ways on Windows through the sftp subsystem
// Windows' OpenSSH ships (the path prepare's uploads take): a file of
// TransferBytes written into the login's home, read back, removed. cmd.exe
// has no binary-safe sink or source, and PowerShell is not needed for this.
// The subsystem's start is not timed; each way includes one round trip for
// the final acknowledgement, taken off as for the POSIX sink.
func (p *prober) throughputSFTP(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*p.opts.StepTimeout)
	defer cancel()
	c, err := sftp.NewClient(p.c, sftp.UseConcurrentWrites(true))
	if err != nil {
		p.find(probe.SeverityWarning, "could not measure the link speed: the second PC's sftp subsystem did not start: "+err.Error(),
			"Windows' OpenSSH serves sftp by default; check the Subsystem sftp line of its sshd_config")
		return
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	name := fmt.Sprintf("strata-linkprobe-%d.tmp", time.Now().UnixNano())
	defer c.Remove(name)

	up, err := func() (float64, error) {
		f, err := c.Create(name)
		if err != nil {
			return 0, err
		}
		t0 := time.Now()
		_, err = f.ReadFrom(io.LimitReader(zeros{}, p.opts.TransferBytes))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, ctxOr(ctx, err)
		}
		return rate(p.opts.TransferBytes, time.Since(t0), p.r.RTT), nil
	}()
	if err != nil {
		p.find(probe.SeverityWarning, "could not measure the upload speed to the second PC: "+err.Error(), "")
		return
	}
	p.r.UpBytesPerSec = up
	down, err := func() (float64, error) {
		f, err := c.Open(name)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		t0 := time.Now()
		n, err := f.WriteTo(io.Discard)
		if err != nil {
			return 0, ctxOr(ctx, err)
		}
		if n < p.opts.TransferBytes {
			return 0, fmt.Errorf("only %d of %d bytes arrived", n, p.opts.TransferBytes)
		}
		return rate(n, time.Since(t0), p.r.RTT), nil
	}()
	if err != nil {
		p.find(probe.SeverityWarning, "could not measure the download speed from the second PC: "+err.Error(), "")
		return
	}
	p.r.DownBytesPerSec = down
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}
