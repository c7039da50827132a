package lint

import "time"

// SetWalkEntries sets the entries one walk looks at, for a test of the
// package from outside; it returns what restores it.
func SetWalkEntries(n int) (restore func()) {
	old := walkEntries
	walkEntries = n
	return func() { walkEntries = old }
}

// SetWalkTimes sets the time bounds of one walk and of one run's walks,
// for a test whose result must not depend on the machine's speed; it
// returns what restores them.
func SetWalkTimes(walk, run time.Duration) (restore func()) {
	oldWalk, oldRun := walkTime, runWalkTime
	walkTime, runWalkTime = walk, run
	return func() { walkTime, runWalkTime = oldWalk, oldRun }
}
