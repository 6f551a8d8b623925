package live

// SetOnLocalWrite sets the hook that runs before this process writes the
// config or the settings itself (no service answered); it returns the undo.
func SetOnLocalWrite(f func(what string)) (undo func()) {
	old := onLocalWrite
	onLocalWrite = f
	return func() { onLocalWrite = old }
}
