package lint

// SetWalkEntries sets the entries one walk looks at, for a test of the
// package from outside; it returns what restores it.
func SetWalkEntries(n int) (restore func()) {
	old := walkEntries
	walkEntries = n
	return func() { walkEntries = old }
}
