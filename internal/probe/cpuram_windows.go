//go:build windows

package probe

import (
	"context"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

var (
	kernel32                           = windows.NewLazySystemDLL("kernel32.dll")
	procGlobalMemoryStatusEx           = kernel32.NewProc("GlobalMemoryStatusEx")
	procGetLogicalProcessorInfo        = kernel32.NewProc("GetLogicalProcessorInformation")
	relationProcessorCore       uint32 = 0
)

// memoryStatusEx is MEMORYSTATUSEX.
type memoryStatusEx struct {
	Length               uint32
	MemoryLoad           uint32
	TotalPhys            uint64
	AvailPhys            uint64
	TotalPageFile        uint64
	AvailPageFile        uint64
	TotalVirtual         uint64
	AvailVirtual         uint64
	AvailExtendedVirtual uint64
}

// logicalProcessorInfo is SYSTEM_LOGICAL_PROCESSOR_INFORMATION (the union
// is two ULONGLONGs).
type logicalProcessorInfo struct {
	ProcessorMask uintptr
	Relationship  uint32
	_             [2]uint64
}

func probeCPURAM(context.Context, Options) (CPU, RAM, []Finding) {
	var probs []Finding
	cpu := CPU{Threads: runtime.NumCPU()}
	if k, err := registry.OpenKey(registry.LOCAL_MACHINE, `HARDWARE\DESCRIPTION\System\CentralProcessor\0`, registry.QUERY_VALUE); err == nil {
		if s, _, err := k.GetStringValue("ProcessorNameString"); err == nil {
			cpu.Model = strings.Join(strings.Fields(s), " ")
		}
		k.Close()
	}
	cpu.Cores = physicalCores()
	if cpu.Cores == 0 {
		cpu.Cores = cpu.Threads
	}
	ram := RAM{TotalMiB: -1, FreeMiB: -1}
	ms := memoryStatusEx{Length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if r, _, err := procGlobalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&ms))); r != 0 {
		ram.TotalMiB = int(ms.TotalPhys >> 20)
		ram.FreeMiB = int(ms.AvailPhys >> 20)
	} else {
		probs = append(probs, Finding{SeverityWarning, "could not read the memory figures: " + err.Error(), ""})
	}
	return cpu, ram, probs
}

// physicalCores counts RelationProcessorCore entries; 0 when Windows would
// not say.
func physicalCores() int {
	var size uint32
	procGetLogicalProcessorInfo.Call(0, uintptr(unsafe.Pointer(&size)))
	if size == 0 {
		return 0
	}
	n := int(size) / int(unsafe.Sizeof(logicalProcessorInfo{}))
	buf := make([]logicalProcessorInfo, n+1)
	size = uint32(len(buf)) * uint32(unsafe.Sizeof(logicalProcessorInfo{}))
	if r, _, _ := procGetLogicalProcessorInfo.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size))); r == 0 {
		return 0
	}
	cores := 0
	for _, e := range buf[:int(size)/int(unsafe.Sizeof(logicalProcessorInfo{}))] {
		if e.Relationship == relationProcessorCore {
			cores++
		}
	}
	return cores
}
