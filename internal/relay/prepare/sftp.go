package prepare

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// SFTPPath is a second-PC path as its sftp server names it: Windows'
// sftp-server shows C:\Users\sam as /C:/Users/sam; relative paths are from
// the login's home on both.
func SFTPPath(goos, p string) string {
	if goos != "windows" {
		return p
	}
	p = strings.ReplaceAll(p, `\`, "/")
	if len(p) > 1 && p[1] == ':' {
		p = "/" + p
	}
	return p
}

// UploadSFTP copies local to remote over c's sftp subsystem (which Windows'
// OpenSSH serves by default), without a remote shell or script:
//   - a remote file whose sha256 matches is left as it is (uploaded false);
//   - the data goes to remote+".part" first; a .part left by an earlier,
//     broken upload is resumed when its bytes match the start of local;
//   - the .part's sha256 is read back and checked before it is renamed over
//     remote, so a file in place is always whole.
func UploadSFTP(ctx context.Context, c *ssh.Client, local, remote string, out io.Writer) (uploaded bool, err error) {
	if out == nil {
		out = io.Discard
	}
	sc, err := sftp.NewClient(c, sftp.UseConcurrentWrites(true))
	if err != nil {
		return false, fmt.Errorf("the second PC's sftp subsystem did not start (%v); Windows' OpenSSH serves it by default: check the Subsystem sftp line of its sshd_config", err)
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer stop()
	lf, err := os.Open(local)
	if err != nil {
		return false, err
	}
	defer lf.Close()
	st, err := lf.Stat()
	if err != nil {
		return false, err
	}
	want, err := sha256File(local)
	if err != nil {
		return false, err
	}
	if dir := path.Dir(remote); dir != "." && dir != "/" {
		if err := sc.MkdirAll(dir); err != nil {
			return false, fmt.Errorf("making %s on the second PC: %v", dir, err)
		}
	}
	if fi, err := sc.Stat(remote); err == nil && fi.Size() == st.Size() {
		if got, err := remoteSHA256(sc, remote, -1); err == nil && got == want {
			return false, nil
		}
	}
	part := remote + ".part"
	var from int64
	if fi, err := sc.Stat(part); err == nil && fi.Size() > 0 && fi.Size() <= st.Size() {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(lf, 0, fi.Size())); err == nil {
			if got, err := remoteSHA256(sc, part, fi.Size()); err == nil && got == fmt.Sprintf("%x", h.Sum(nil)) {
				from = fi.Size()
				fmt.Fprintf(out, "resuming %s at %d of %d bytes\n", path.Base(remote), from, st.Size())
			}
		}
	}
	flags := os.O_WRONLY | os.O_CREATE
	if from == 0 {
		flags |= os.O_TRUNC
	}
	rf, err := sc.OpenFile(part, flags)
	if err != nil {
		return false, fmt.Errorf("writing %s on the second PC: %v", part, err)
	}
	if _, err := rf.Seek(from, io.SeekStart); err != nil {
		rf.Close()
		return false, err
	}
	pr := &progress{w: out, name: path.Base(remote), total: st.Size(), sent: from}
	_, err = rf.ReadFrom(io.TeeReader(io.NewSectionReader(lf, from, st.Size()-from), pr))
	if cerr := rf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return false, fmt.Errorf("copying %s to the second PC (run it again to resume): %v", path.Base(remote), err)
	}
	pr.done()
	got, err := remoteSHA256(sc, part, -1)
	if err != nil {
		return false, err
	}
	if got != want {
		sc.Remove(part)
		return false, fmt.Errorf("%s arrived damaged on the second PC (sha256 %s, want %s); run it again", path.Base(remote), got, want)
	}
	if err := sc.PosixRename(part, remote); err != nil {
		// A server without posix-rename: Windows' rename fails on an
		// existing target, so remove it first.
		sc.Remove(remote)
		if err := sc.Rename(part, remote); err != nil {
			return false, fmt.Errorf("putting %s in place on the second PC: %v (is a copy of it running? stop Strata and try again)", remote, err)
		}
	}
	return true, nil
}

// remoteSHA256 reads the first n bytes (all when n < 0) of a remote file.
func remoteSHA256(sc *sftp.Client, name string, n int64) (string, error) {
	f, err := sc.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	var r io.Reader = f
	if n >= 0 {
		r = io.LimitReader(f, n)
	}
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}
