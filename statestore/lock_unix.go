//go:build unix

package statestore

import (
	"errors"
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

// tryLock takes an exclusive flock on f without waiting: false when another open file description holds one.
func tryLock(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// unlinked reports whether f's file has no name left: someone removed it after it was opened.
func unlinked(f *os.File) (bool, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false, err
	}
	return st.Nlink == 0, nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// syscallNoFollow makes an open fail on a symbolic link.
const syscallNoFollow = syscall.O_NOFOLLOW
