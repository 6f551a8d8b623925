package agent

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// windowsVersion is the OS version as ver prints it.
func windowsVersion() string {
	v := windows.RtlGetVersion()
	return fmt.Sprintf("Microsoft Windows [Version %d.%d.%d]", v.MajorVersion, v.MinorVersion, v.BuildNumber)
}
