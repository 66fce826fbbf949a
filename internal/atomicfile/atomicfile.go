package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Write replaces name with data, with mode perm: a temporary file beside it (CreateTemp), written, synced,
// renamed over name, then the directory synced. The directory must exist. On error name is as it was and the
// temporary file is gone.
func Write(name string, data []byte, perm fs.FileMode) (err error) {
	f, err := CreateTemp(name)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return err
	}
	if err := f.Close(); err != nil { // the flock is held until the file has its final name
		return err
	}
	return SyncDir(filepath.Dir(name))
}

// CreateTemp creates the temporary file of a writer of name, .<base>.tmp-<digits> in name's directory, and
// flocks it until it is closed. A cleaner may remove the file between its creation and the flock; then the
// file has no name any more, and another is made.
func CreateTemp(name string) (*os.File, error) {
	for {
		f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
		if err != nil {
			return nil, err
		}
		locked, err := tryLock(f)
		if err == nil && locked {
			var gone bool
			if gone, err = unlinked(f); err == nil && !gone {
				return f, nil
			}
		}
		f.Close()
		if err != nil {
			os.Remove(f.Name())
			return nil, err
		}
		// Not locked: a cleaner holds it and removes it. Unlinked: a cleaner removed it. Make another.
	}
}

// IsTempOf reports whether name (a base name) is a temporary file of a writer of the file base:
// ".<base>.tmp-<digits>".
func IsTempOf(name, base string) bool {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp-")
	return ok && isDigits(rest)
}

// IsTemp reports whether name (a base name) is a temporary file of a writer of any file: ".<x>.tmp-<digits>".
func IsTemp(name string) bool {
	i := strings.LastIndex(name, ".tmp-")
	return i > 1 && name[0] == '.' && isDigits(name[i+len(".tmp-"):])
}

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// RemoveStale removes the temporary files in dir (not below it) that isTemp accepts and no live writer holds
// (a killed writer's flock is gone), and returns the paths it removed. A file it could not remove is in the
// error, and the others are still tried: they are litter, which the next call tries again.
func RemoveStale(dir string, isTemp func(name string) bool) (removed []string, err error) {
	if !staleKnown {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTemp(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		switch ok, err := RemoveIfUnlocked(p); {
		case err != nil:
			errs = append(errs, fmt.Errorf("removing the stale temporary file %s: %w", p, err))
		case ok:
			removed = append(removed, p)
		}
	}
	return removed, errors.Join(errs...)
}

// RemoveIfUnlocked removes the file p if it can flock it without waiting (no process holds a flock on it), and
// p is still the file it locked; it reports whether it removed it. A file that does not exist is not an error.
func RemoveIfUnlocked(p string) (bool, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close() // releases the lock, after the removal
	if locked, err := tryLock(f); err != nil || !locked {
		return false, err // a live writer's
	}
	locked, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(locked, now) {
		return false, nil // renamed to its final name since it was opened
	}
	if err != nil {
		return false, err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// SyncDir makes a rename or a removal in dir durable. A filesystem that cannot sync a directory (fsync says
// unsupported, or EINVAL) is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
