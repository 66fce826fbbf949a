package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"kubeup.dev/kubeup/engine"
)

// writeAtomic replaces path with data: a temporary file in the same directory (".NAME.tmp-DIGITS"), synced,
// renamed over path, and the directory synced, so that a reader (or a crash) sees the old contents or the new,
// never a mix. The temporary file is flocked while it lives, so that cleanTemps leaves it alone.
func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, classify(err))
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	// The flock says "in use" to cleanTemps until the file has its final name: it is held until Close.
	err = flock(tmp)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, classify(err))
	}
	return nil
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// classify tells the engine how to treat a filesystem error. A permission problem is access denied (a warning
// under lifecycle WarnIfInsufficientAccess); a busy file is worth another try; anything else is terminal.
func classify(err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", engine.ErrAccessDenied, err)
	case errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.EAGAIN):
		return engine.Retryable(err)
	}
	return err
}

// isTempOf reports whether name is a temporary file writeAtomic makes for a file named base: ".BASE.tmp-DIGITS".
func isTempOf(name, base string) bool {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp-")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

// cleanTemps removes what a killed writer left in dir: the temporary files that isTemp says are ours, and only
// those that no live writer holds (writeAtomic holds a flock on its temporary file until it has its final
// name; a killed process's flocks are gone). A file it cannot remove is logged, not an error: it is litter,
// not the writer's problem.
func cleanTemps(ctx context.Context, dir string, isTemp func(string) bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTemp(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		removed, err := removeIfUnlocked(path)
		switch {
		case err != nil:
			engine.Logger(ctx).Warn("cannot remove a temporary file a killed kubeup left", "path", path, "error", err)
		case removed:
			engine.Logger(ctx).Info("removed a temporary file a killed kubeup left", "path", path)
		}
	}
}

// removeIfUnlocked removes path if it can flock it, and it is still the file it locked.
func removeIfUnlocked(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := flock(f); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil // a live writer's
		}
		return false, err
	}
	locked, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(locked, now) {
		return false, nil // renamed to its final name since it was opened
	}
	if err != nil {
		return false, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}
