//go:build windows

package probe

import (
	"errors"
	"strings"

	"golang.org/x/sys/windows/registry"
)

// The display-adapter class in the Windows registry: one numbered subkey
// (0000, 0001, ...) per installed adapter driver.
const displayClassKey = `SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}`

// probeOSGPUs reads every display adapter's VRAM from the registry value
// HardwareInformation.qwMemorySize (64-bit, any vendor). WMI's AdapterRAM is
// never used: it is 32-bit and caps at 4 GB.
func probeOSGPUs(Options) ([]GPU, []Finding) {
	class, err := registry.OpenKey(registry.LOCAL_MACHINE, displayClassKey, registry.ENUMERATE_SUB_KEYS|registry.QUERY_VALUE)
	if err != nil {
		return nil, []Finding{{SeverityWarning, "could not read the display adapters from the registry: " + err.Error(), "run the probe as a user that can read HKLM (any normal user can); if this persists, the Windows installation may be damaged"}}
	}
	defer class.Close()
	names, err := class.ReadSubKeyNames(-1)
	if err != nil {
		return nil, []Finding{{SeverityWarning, "could not list the display adapters in the registry: " + err.Error(), ""}}
	}
	var as []regAdapter
	for _, n := range names {
		if len(n) != 4 || strings.Trim(n, "0123456789") != "" {
			continue // "Properties" and the like
		}
		k, err := registry.OpenKey(class, n, registry.QUERY_VALUE)
		if err != nil {
			continue // access denied on a subkey: skip it, keep the rest
		}
		a := regAdapter{}
		a.Name, _, _ = k.GetStringValue("DriverDesc")
		a.HardwareID, _, _ = k.GetStringValue("MatchingDeviceId")
		a.Driver, _, _ = k.GetStringValue("DriverVersion")
		a.MemBytes = regMemory(k, "HardwareInformation.qwMemorySize")
		if a.MemBytes == 0 {
			// Older drivers write only the 32-bit value; it is right below 4 GB.
			if v := regMemory(k, "HardwareInformation.MemorySize"); v > 0 && v < 4<<30 {
				a.MemBytes = v
			}
		}
		k.Close()
		as = append(as, a)
	}
	return adaptersToGPUs(as), nil
}

// regMemory reads a size stored as REG_QWORD, REG_DWORD or REG_BINARY.
func regMemory(k registry.Key, name string) uint64 {
	if v, _, err := k.GetIntegerValue(name); err == nil {
		return v
	} else if !errors.Is(err, registry.ErrUnexpectedType) {
		return 0
	}
	b, _, err := k.GetBinaryValue(name)
	if err != nil {
		return 0
	}
	mib, ok := regMemoryMiB(b)
	if !ok {
		return 0
	}
	return uint64(mib) << 20
}
