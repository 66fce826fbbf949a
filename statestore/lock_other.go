//go:build !unix

package statestore

import (
	"fmt"
	"os"
	"runtime"
)

// lockDir fails: the file:// store needs flock to make WriteIf safe between processes.
func lockDir(dir string) (unlock func(), err error) {
	return nil, fmt.Errorf("file:// state stores need flock, which %s does not have", runtime.GOOS)
}

// tryLock never succeeds: without flock, a temporary file cannot be known to be stale.
func tryLock(f *os.File) (bool, error) { return false, nil }

func unlinked(f *os.File) (bool, error) { return false, nil }

const syscallNoFollow = 0
