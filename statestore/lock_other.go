//go:build !unix

package statestore

import (
	"fmt"
	"runtime"
)

// lockDir fails: the file:// store needs flock to make WriteIf safe between processes.
func lockDir(dir string) (unlock func(), err error) {
	return nil, fmt.Errorf("file:// state stores need flock, which %s does not have", runtime.GOOS)
}
