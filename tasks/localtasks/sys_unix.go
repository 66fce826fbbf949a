//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package localtasks

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// flock takes an exclusive flock on f without waiting: EWOULDBLOCK when another descriptor holds it.
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// allocated returns the bytes of storage a file uses (less than its size when it is sparse), and whether the
// platform says.
func allocated(fi fs.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(st.Blocks) * 512, true
}

// processGone reports whether no process of this pid exists on this machine.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
