package account

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Privileged reports whether this process runs as SYSTEM or elevated (an
// administrator's full token).
func Privileged() bool {
	tok := windows.GetCurrentProcessToken()
	if tok.IsElevated() {
		return true
	}
	u, err := tok.GetTokenUser()
	return err == nil && u.User.Sid.IsWellKnown(windows.WinLocalSystemSid)
}

// Current is the account this process runs as.
func Current() (*Account, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, err
	}
	return bySID(u.User.Sid), nil
}

// OwnerOf is the account that owns path (for a Strata install: the
// install's owner).
func OwnerOf(path string) (*Account, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return nil, fmt.Errorf("reading the owner of %s: %w", path, err)
	}
	sid, _, err := sd.Owner()
	if err != nil {
		return nil, fmt.Errorf("reading the owner of %s: %w", path, err)
	}
	return bySID(sid), nil
}

func bySID(sid *windows.SID) *Account {
	a := &Account{SID: sid.String(), Name: sid.String(), Privileged: adminSID(sid)}
	if name, dom, _, err := sid.LookupAccount(""); err == nil {
		a.Name = name
		if dom != "" {
			a.Name = dom + `\` + name
		}
	}
	return a
}

// adminSID: SYSTEM, the Administrators group, TrustedInstaller.
func adminSID(sid *windows.SID) bool {
	return sid.IsWellKnown(windows.WinLocalSystemSid) || sid.IsWellKnown(windows.WinBuiltinAdministratorsSid) ||
		strings.HasPrefix(sid.String(), "S-1-5-80-956008885-")
}

// writeMask is every right that changes a folder's content or its rights.
const writeMask = windows.FILE_WRITE_DATA | windows.FILE_APPEND_DATA | windows.FILE_WRITE_EA |
	0x40 | // FILE_DELETE_CHILD
	windows.FILE_WRITE_ATTRIBUTES | windows.DELETE | windows.WRITE_DAC |
	windows.WRITE_OWNER | windows.GENERIC_WRITE | windows.GENERIC_ALL

// writers lists the accounts other than the administrators that path's
// ACL lets change it.
func writers(path string) ([]string, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return nil, err
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		return []string{"Everyone (the folder has no access list)"}, nil
	}
	var out []string
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if windows.GetAce(dacl, i, &ace) != nil {
			continue
		}
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || ace.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0 {
			continue
		}
		if uint32(ace.Mask)&writeMask == 0 {
			continue
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if adminSID(sid) || sid.IsWellKnown(windows.WinCreatorOwnerSid) {
			continue
		}
		out = append(out, bySID(sid).Name)
	}
	return out, nil
}

// ServerAccount decides which account runs Strata's server from root: nil
// means this process's own (a service whose install only administrators
// can change); an account means the install's owner, whose signed-in
// session the server runs in (see Token); an error means neither is
// possible. loads are what Strata runs or reads because of its config
// (the config, the programs and folders it names, its env's paths): each
// must be as safe as the install's own files.
func ServerAccount(root, python string, loads ...string) (*Account, error) {
	if !Privileged() {
		return nil, nil
	}
	own, err := OwnerOf(root)
	if err != nil {
		return nil, err
	}
	if me, err := Current(); err == nil && me.SID == own.SID {
		return nil, nil // the service runs as the install's owner already
	}
	if !own.Privileged {
		return own, nil
	}
	for _, p := range append([]string{root, root + `\serve`, root + `\serve\server.py`, root + `\engine`, python}, loads...) {
		if p == "" {
			continue
		}
		w, err := writers(p)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		if len(w) > 0 {
			return nil, &ServerRefusedError{Root: root, Reason: fmt.Sprintf("%s may be changed by %s", p, strings.Join(w, ", ")),
				Fix: fmt.Sprintf("Make the folder yours (right-click %s, Properties, Security, Advanced, Owner), and the service runs Strata as you while you are signed in; or let only Administrators change it", root)}
		}
	}
	return nil, nil
}

// Token is a's signed-in session's token, for starting Strata's server as
// a; the caller closes it. A service (SYSTEM) may ask Windows for it; there
// is none while a is not signed in, and the error says so.
func (a *Account) Token() (syscall.Token, error) {
	var sessions *windows.WTS_SESSION_INFO
	var n uint32
	if err := windows.WTSEnumerateSessions(0, 0, 1, &sessions, &n); err != nil {
		return 0, fmt.Errorf("listing the signed-in sessions: %w", err)
	}
	defer windows.WTSFreeMemory(uintptr(unsafe.Pointer(sessions)))
	for _, s := range unsafe.Slice(sessions, n) {
		var tok windows.Token
		if windows.WTSQueryUserToken(s.SessionID, &tok) != nil {
			continue
		}
		u, err := tok.GetTokenUser()
		if err == nil && u.User.Sid.String() == a.SID {
			st, err := inServiceSession(tok)
			tok.Close()
			if err != nil {
				return 0, err
			}
			return syscall.Token(st), nil
		}
		tok.Close()
	}
	return 0, fmt.Errorf("Strata's folder belongs to %s, who is not signed in: the service runs Strata as %s, in that account's session, never with its own rights. Sign in as %s and choose Start Strata in the tray; or move Strata to a folder only administrators can change", a.Name, a.Name, a.Name)
}

// inServiceSession is a primary copy of tok in the service's own session
// (session 0), where Strata ran before as SYSTEM: the same GPU access, and
// the service's console, which Ctrl-Break (Strata's stop) needs to share.
// Only the account changes. (SYSTEM holds SeTcbPrivilege, which setting a
// token's session needs.)
func inServiceSession(tok windows.Token) (windows.Token, error) {
	var dup windows.Token
	if err := windows.DuplicateTokenEx(tok, windows.MAXIMUM_ALLOWED, nil, windows.SecurityImpersonation, windows.TokenPrimary, &dup); err != nil {
		return 0, fmt.Errorf("copying the owner's token: %w", err)
	}
	var session uint32
	if err := windows.ProcessIdToSessionId(windows.GetCurrentProcessId(), &session); err != nil {
		dup.Close()
		return 0, err
	}
	if err := windows.SetTokenInformation(dup, windows.TokenSessionId, (*byte)(unsafe.Pointer(&session)), uint32(unsafe.Sizeof(session))); err != nil {
		dup.Close()
		return 0, fmt.Errorf("moving the owner's token to the service's session: %w", err)
	}
	return dup, nil
}

// WritePrivate replaces path with data, readable only by SYSTEM, the
// Administrators and reader (nil: those two alone): the temporary file gets
// its protected access list before the data is written into it.
func WritePrivate(path string, data []byte, reader *Account) error {
	sid := ""
	if reader != nil {
		sid = reader.SID
	}
	sddl := PrivateSDDL(sid)
	return replacePrivate(path, data, 0o600, func(_ *os.File, tmp string) error { return SetACL(tmp, sddl) })
}

// SetACL gives path the protected access list sddl (no inherited entries).
func SetACL(path, sddl string) error {
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		return fmt.Errorf("setting the access list of %s: %w", path, err)
	}
	return nil
}

// GrantRead lets a read path (the companion's ssh key) without giving it
// to anyone else.
func GrantRead(path, dir string, a *Account) error {
	if a == nil || a.SID == "" || !Privileged() {
		return nil
	}
	return SetACL(path, PrivateSDDL(a.SID))
}

// Lookup is the local account named name: on Windows only the account
// running this program (a name of another account is refused).
func Lookup(name string) (*Account, error) {
	a, err := Current()
	if err != nil {
		return nil, err
	}
	if name == "" || strings.EqualFold(name, a.Name) || strings.EqualFold(name, a.Name[strings.LastIndex(a.Name, `\`)+1:]) {
		return a, nil
	}
	return nil, fmt.Errorf("on Windows, lend for the account that runs it: sign in as %s and lend from there", name)
}
