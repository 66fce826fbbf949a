//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package localtasks

import (
	"errors"
	"io/fs"
	"os"
)

func flock(f *os.File) error {
	return errors.New("the local provider needs flock(2): run kubeup on Linux or a BSD (macOS included)")
}

func allocated(fi fs.FileInfo) (int64, bool) { return 0, false }

func processGone(pid int) bool { return false }
