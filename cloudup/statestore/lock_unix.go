//go:build unix

package statestore

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on name, creating it, and returns the function that releases it. flock
// excludes other processes and, since each call opens its own file description, other goroutines too.
func lockFile(name string) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the last descriptor releases the lock
}
