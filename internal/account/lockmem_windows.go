package account

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// lockMemoryName is the user right Strata needs to lock its expert cache
// into RAM ("Lock pages in memory" in Local Security Policy).
const lockMemoryName = "SeLockMemoryPrivilege"

var (
	advapi32                = windows.NewLazySystemDLL("advapi32.dll")
	procAdjustTokenPrivs    = advapi32.NewProc("AdjustTokenPrivileges")
	procLsaOpenPolicy       = advapi32.NewProc("LsaOpenPolicy")
	procLsaAddAccountRights = advapi32.NewProc("LsaAddAccountRights")
	procLsaClose            = advapi32.NewProc("LsaClose")
	procLsaNtStatusToWinErr = advapi32.NewProc("LsaNtStatusToWinError")
)

// Access rights LsaAddAccountRights needs on the policy object.
const (
	policyCreateAccount = 0x00000010
	policyLookupNames   = 0x00000800
)

// LockMemory gives a token that runs Strata the right to lock memory: it
// enables SeLockMemoryPrivilege in tok when the token holds it (a token's
// privileges start disabled, and Strata's server would otherwise run
// without it), and when it does not, grants the right to a (the install's
// owner) in the local security policy. A granted right reaches only tokens
// made at a later sign-in, so the returned note says what the owner must
// do; "" means the token may lock memory now.
func LockMemory(tok windows.Token, a *Account) (string, error) {
	var luid windows.LUID
	name, _ := windows.UTF16PtrFromString(lockMemoryName)
	if err := windows.LookupPrivilegeValue(nil, name, &luid); err != nil {
		return "", fmt.Errorf("looking up %s: %w", lockMemoryName, err)
	}
	tp := windows.Tokenprivileges{PrivilegeCount: 1}
	tp.Privileges[0] = windows.LUIDAndAttributes{Luid: luid, Attributes: windows.SE_PRIVILEGE_ENABLED}
	// AdjustTokenPrivileges succeeds for a privilege the token lacks too,
	// and says so only in the last error (x/sys/windows' wrapper drops it).
	r1, _, e := procAdjustTokenPrivs.Call(uintptr(tok), 0, uintptr(unsafe.Pointer(&tp)), 0, 0, 0)
	if r1 == 0 {
		return "", fmt.Errorf("enabling %s in %s's token: %w", lockMemoryName, a.Name, e)
	}
	if e != windows.ERROR_NOT_ALL_ASSIGNED {
		return "", nil // held, and now enabled
	}
	// Not held: the account lacks the right. Grant it (the service is
	// SYSTEM; the right is what Strata's own notes ask for).
	if err := grantRight(a.SID, lockMemoryName); err != nil {
		return "", fmt.Errorf("%s may not lock memory, so Strata keeps its expert cache in pageable memory, and granting the right failed (%v): "+
			"open Local Security Policy, Local Policies, User Rights Assignment, \"Lock pages in memory\", add %s, then sign out and in", a.Name, err, a.Name)
	}
	return fmt.Sprintf("%s was given the right to lock memory (\"Lock pages in memory\"), which Strata needs to keep its expert cache in RAM; "+
		"it applies from %s's next sign-in: until then Strata runs without it (sign out and in, then restart Strata from the tray)", a.Name, a.Name), nil
}

// grantRight adds the user right to the account sid in the local security
// policy (LsaAddAccountRights).
func grantRight(sid, right string) error {
	s, err := windows.StringToSid(sid)
	if err != nil {
		return err
	}
	var attrs windows.OBJECT_ATTRIBUTES
	attrs.Length = uint32(unsafe.Sizeof(attrs))
	var policy windows.Handle
	if st, _, _ := procLsaOpenPolicy.Call(0, uintptr(unsafe.Pointer(&attrs)), policyCreateAccount|policyLookupNames, uintptr(unsafe.Pointer(&policy))); st != 0 {
		return ntError(st)
	}
	defer procLsaClose.Call(uintptr(policy))
	u, err := windows.NewNTUnicodeString(right)
	if err != nil {
		return err
	}
	if st, _, _ := procLsaAddAccountRights.Call(uintptr(policy), uintptr(unsafe.Pointer(s)), uintptr(unsafe.Pointer(u)), 1); st != 0 {
		return ntError(st)
	}
	return nil
}

func ntError(status uintptr) error {
	code, _, _ := procLsaNtStatusToWinErr.Call(status)
	return windows.Errno(code)
}
