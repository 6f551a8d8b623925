package strataconfig

// NamesRelay reports whether the config's vision block runs the companion's
// relay (strata-vision-relay) as Strata's encoder. Such a config stays as it
// is when pictures move between the second PC, this PC's CPU and off: the
// relay reads where from the companion's settings, per picture.
func (c *Config) NamesRelay() bool { return c.Vision != nil && isRelay(c.Vision.Exe) }

// SettingsPathInEnv is the companion settings file the config hands the
// relay (its env entry STRATA_COMPANION_SETTINGS), "" when none.
func (c *Config) SettingsPathInEnv() string { return c.Env[EnvSettings] }

// Parse reads config text as if it were the file at path (to look at a
// planned change before it is written).
func Parse(path string, text []byte) (*Config, error) { return fromBytes(path, text) }
