package lender

import (
	"fmt"
	"strconv"
	"strings"
)

// FirewallRuleName names the one firewall rule lend adds on Windows (and
// the one stop deletes).
const FirewallRuleName = "Strata Companion - lend this PC's GPU"

// Step is one thing lend does (or stop undoes), as data: what a person
// reads, and the program it runs. Dry runs list them; tests run the
// Windows ones under wine where wine can.
type Step struct {
	Say  string   `json:"say"`
	Argv []string `json:"argv,omitempty"` // nil: done in this program (no outside command)
	// If, when set, names the check that decides whether the step runs
	// ("no ssh server answers", ...).
	If string `json:"if,omitempty"`
}

func (s Step) String() string {
	out := "- " + s.Say
	if s.If != "" {
		out += " (only if " + s.If + ")"
	}
	if len(s.Argv) > 0 {
		out += "\n    " + strings.Join(quoteAll(s.Argv), " ")
	}
	return out
}

func quoteAll(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsAny(a, " \"'") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}

// sshCapability is Windows' OpenSSH server as an optional feature.
const sshCapability = "OpenSSH.Server~~~~0.0.1.0"

// windowsSSHSteps open Windows' own OpenSSH server: the capability, the
// service set to Automatic and started, and a firewall rule for the ssh
// and pairing ports limited to the Private profile and the local subnet
// (never Public).
func windowsSSHSteps(sshPort, pairPort int) []Step {
	ports := fmt.Sprintf("%d,%d", sshPort, pairPort)
	return []Step{
		{Say: "install Windows' OpenSSH Server (an optional feature of Windows)", If: "the sshd service is not installed",
			Argv: []string{"powershell.exe", "-NoProfile", "-NonInteractive", "-Command", "Add-WindowsCapability -Online -Name " + sshCapability}},
		{Say: "set the OpenSSH Server service (sshd) to start automatically", If: "no ssh server answers",
			Argv: []string{"sc.exe", "config", "sshd", "start=", "auto"}},
		{Say: "start the OpenSSH Server service (sshd)", If: "no ssh server answers", Argv: []string{"sc.exe", "start", "sshd"}},
		{Say: "let other PCs on the home network (Private profile, local subnet only; never Public) reach ports " + ports,
			Argv: []string{"netsh.exe", "advfirewall", "firewall", "add", "rule", "name=" + FirewallRuleName, "dir=in", "action=allow",
				"protocol=TCP", "localport=" + ports, "profile=private", "remoteip=localsubnet"}},
	}
}

// windowsUndoSteps put Windows back as lend found it.
func windowsUndoSteps(r *Record) []Step {
	var s []Step
	if r.FirewallRule != "" {
		s = append(s, Step{Say: "remove the firewall rule lend added",
			Argv: []string{"netsh.exe", "advfirewall", "firewall", "delete", "rule", "name=" + r.FirewallRule}})
	}
	if r.SSHEnabled {
		s = append(s,
			Step{Say: "stop the OpenSSH Server service lend started", Argv: []string{"sc.exe", "stop", "sshd"}},
			Step{Say: "set it back to start by hand (as before lend)", Argv: []string{"sc.exe", "config", "sshd", "start=", "demand"}})
	}
	return s
}

// linuxUnits are the ssh server units distributions ship, in the order
// tried: Debian/Ubuntu's ssh.service, Fedora/Arch/SUSE's sshd.service,
// Ubuntu's socket-activated ssh.socket.
var linuxUnits = []string{"ssh.service", "sshd.service", "ssh.socket"}

func linuxSSHSteps(unit string) []Step {
	if unit == "" {
		unit = "ssh.service"
	}
	return []Step{{Say: "start the ssh server and start it at boot (" + unit + ")", If: "no ssh server answers",
		Argv: []string{"systemctl", "enable", "--now", unit}}}
}

func linuxUndoSteps(r *Record) []Step {
	if !r.SSHEnabled {
		return nil
	}
	return []Step{{Say: "stop the ssh server lend started, and no longer start it at boot", Argv: []string{"systemctl", "disable", "--now", r.SSHServer}}}
}

// Plan is every step of lend for goos, in order (the dry run).
func Plan(goos string, o Options) []Step {
	var s []Step
	s = append(s, Step{Say: fmt.Sprintf("check whether an ssh server answers on port %d (one that does is left exactly as it is)", o.SSHPort)})
	if goos == "windows" {
		s = append(s, windowsSSHSteps(o.SSHPort, o.PairPort)...)
	} else {
		s = append(s, linuxSSHSteps("")...)
	}
	s = append(s,
		Step{Say: "install the companion's agent (strata-vision-relay) for the account " + o.User + " in " + agentDirWords(goos)},
		Step{Say: fmt.Sprintf("make a pairing code (valid %s, one use, dead after %d wrong tries) and show it", o.Valid, 5)},
		Step{Say: fmt.Sprintf("wait for the other PC's pairing on port %d; give it a key that may run only the agent", o.PairPort)},
		Step{Say: "announce this PC on the home network (DNS-SD/mDNS: its name, address, GPUs and host key fingerprint; never the code)"})
	return s
}

// UndoPlan is every step of lend stop for goos, from the record.
func UndoPlan(goos string, r *Record) []Step {
	s := []Step{
		{Say: "remove the keys of the paired PCs from " + r.KeysFile + " (every other line stays byte for byte)"},
		{Say: "end the lent agent and its encoder now"},
		{Say: "remove the agent folder " + r.AgentDir},
	}
	if goos == "windows" {
		return append(s, windowsUndoSteps(r)...)
	}
	return append(s, linuxUndoSteps(r)...)
}

func agentDirWords(goos string) string {
	if goos == "windows" {
		return `%USERPROFILE%\strata-companion`
	}
	return "~/strata-companion"
}
