package controlserver

// RaiseFDLimit does nothing on Windows (handles have no per-process limit
// of that kind).
func RaiseFDLimit() (uint64, error) { return 0, nil }
