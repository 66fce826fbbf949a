//go:build linux

package volumetasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// blockDeviceNumber returns the device number of path as mountinfo writes it ("259:3"); ok is false when path is
// no block device (a file standing for one in a test).
func blockDeviceNumber(path string) (num string, ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", false, fmt.Errorf("device %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return "", false, nil
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), true, nil
}

// HeldExclusively reports whether block device path is held open exclusively: mounted (in any mount namespace),
// a partition of it mounted, or claimed by device mapper, md or swap. Opening it with O_EXCL tells: EBUSY. A
// device that is gone (unbound, detached meanwhile) is not held.
func HeldExclusively(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_EXCL, 0)
	switch {
	case err == nil:
		f.Close()
		return false, nil
	case errors.Is(err, syscall.EBUSY):
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENXIO):
		return false, nil // gone meanwhile: detached
	}
	return false, fmt.Errorf("checking whether %s is in use: %w", path, err)
}
