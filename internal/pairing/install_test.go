package pairing

import (
	"strings"
	"testing"
)

func TestWindowsScriptEncoding(t *testing.T) {
	// The script reaches PowerShell as base64 UTF-16LE, whatever the login shell.
	cmd := powershell("Write-Output 'é'")
	f := strings.Fields(cmd)
	if f[0] != "powershell" || f[len(f)-2] != "-EncodedCommand" {
		t.Fatalf("command %q", cmd)
	}
	if want := "VwByAGkAdABlAC0ATwB1AHQAcAB1AHQAIAAnAOkAJwA="; f[len(f)-1] != want {
		t.Errorf("encoded %q, want %q", f[len(f)-1], want)
	}
}
