//go:build !unix

package testbin

// Without flock, builds are not serialised: two test packages may build
// the same binary, each into a folder of its own, and the rename that puts
// it in place is atomic, so neither sees half a binary.
func lock(string) (func(), error) { return func() {}, nil }

func tryLock(string) (func(), bool) { return nil, false }
