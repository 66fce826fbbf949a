//go:build unix

package statestore

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive flock on the directory dir itself (no lock file, so a store emptied by deleting
// its clusters leaves nothing behind) and returns the function that releases it. flock excludes other
// processes and, since each call opens its own file description, other goroutines too.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	if err := flock(f, syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the last descriptor releases the lock
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
