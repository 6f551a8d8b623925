package agent

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// defaultKeysFile is the file Windows' OpenSSH reads for this login with
// its default sshd_config.
func defaultKeysFile() (string, bool, error) {
	if isAdmin() {
		pd := os.Getenv("ProgramData")
		if pd == "" {
			pd = `C:\ProgramData`
		}
		return filepath.Join(pd, "ssh", "administrators_authorized_keys"), true, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", false, err
	}
	return filepath.Join(home, ".ssh", "authorized_keys"), false, nil
}

// isAdmin: the login's token holds Administrators (S-1-5-32-544), enabled
// or (under UAC) deny-only: sshd's `Match Group administrators` matches both.
func isAdmin() bool {
	sid, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	if err != nil {
		return false
	}
	tok := windows.GetCurrentProcessToken()
	groups, err := tok.GetTokenGroups()
	if err != nil {
		return false
	}
	for _, g := range groups.AllGroups() {
		if g.Sid.Equals(sid) {
			return true
		}
	}
	return false
}

// restrictKeysFile gives path a protected DACL (no inheritance): full
// control for Administrators and SYSTEM, and for a user's own file the user.
// sshd ignores an administrators_authorized_keys with any other entry.
func restrictKeysFile(path string, admin bool) error {
	acl, err := keysACL(admin)
	if err != nil {
		return err
	}
	return windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, acl, nil)
}

// planACL is the protected DACL restrictKeysFile sets, as SDDL.
func planACL(admin bool) (string, error) {
	acl, err := keysACL(admin)
	if err != nil {
		return "", err
	}
	sd, err := windows.NewSecurityDescriptor()
	if err != nil {
		return "", err
	}
	if err := sd.SetDACL(acl, true, false); err != nil {
		return "", err
	}
	if err := sd.SetControl(windows.SE_DACL_PROTECTED, windows.SE_DACL_PROTECTED); err != nil {
		return "", err
	}
	return sd.String(), nil
}

func keysACL(admin bool) (*windows.ACL, error) {
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	if err != nil {
		return nil, err
	}
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		return nil, err
	}
	sids := []*windows.SID{admins, system}
	if !admin {
		u, err := windows.GetCurrentProcessToken().GetTokenUser()
		if err != nil {
			return nil, err
		}
		sids = append(sids, u.User.Sid)
	}
	var ea []windows.EXPLICIT_ACCESS
	for _, s := range sids {
		ea = append(ea, windows.EXPLICIT_ACCESS{
			AccessPermissions: windows.GENERIC_ALL,
			AccessMode:        windows.SET_ACCESS,
			Inheritance:       windows.NO_INHERITANCE,
			Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_WELL_KNOWN_GROUP,
				TrusteeValue: windows.TrusteeValueFromSID(s)},
		})
	}
	return windows.ACLFromEntries(ea, nil)
}

// describeACL is path's DACL as SDDL ("D:P(A;;FA;;;BA)...").
func describeACL(path string) (string, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return "", err
	}
	return sd.String(), nil
}
