//go:build linux

package probe

// probeOSGPUs lists the GPUs sysfs shows (AMD VRAM, Intel and NVIDIA names).
func probeOSGPUs(o Options) ([]GPU, []Finding) {
	gpus, err := ReadSysfsGPUs(o.SysfsRoot)
	if err != nil {
		return nil, []Finding{{SeverityWarning, "could not list GPUs in " + o.SysfsRoot + ": " + err.Error(), "run the probe as a user that can read " + o.SysfsRoot}}
	}
	return gpus, nil
}
