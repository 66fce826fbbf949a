//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// staleKnown: a temporary file that can be flocked without waiting is a killed writer's.
const staleKnown = true

// tryLock takes an exclusive flock on f without waiting: false when another open file description holds one.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return err == nil, err
	}
}

// unlinked reports whether f's file has no name left: someone removed it after it was opened.
func unlinked(f *os.File) (bool, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false, err
	}
	return st.Nlink == 0, nil
}

// noFollow makes an open fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW
