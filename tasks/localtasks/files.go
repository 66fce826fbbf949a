package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"kubeup.dev/kubeup/engine"
)

// writeAtomic replaces path with data: a temporary file in the same directory, synced, renamed over path, and
// the directory synced, so that a reader (or a crash) sees the old contents or the new, never a mix.
func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, classify(err))
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
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

// lockDir takes an exclusive advisory lock (flock) on a directory, for the writers of the files in it, in this
// process and in others. Locking the directory itself leaves no lock file behind. It waits for the lock until
// ctx is done; the returned function releases it.
func lockDir(ctx context.Context, dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, classify(err))
	}
	wait := time.Millisecond
	for {
		err := flock(d)
		if err == nil {
			return func() { d.Close() }, nil // closing the last descriptor releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			d.Close()
			return nil, fmt.Errorf("locking %s: %w", dir, classify(err))
		}
		select {
		case <-ctx.Done():
			d.Close()
			return nil, fmt.Errorf("waiting for the lock on %s, held by another kubeup process: %w", dir, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
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
