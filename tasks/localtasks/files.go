package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
)

// writeAtomic replaces path with data (atomicfile.Write: a flocked temporary file ".NAME.tmp-DIGITS" beside
// it, synced, renamed over path, the directory synced), its error classified for the engine.
func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	if err := atomicfile.Write(path, data, perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, classify(err))
	}
	return nil
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

// cleanTemps removes what a killed writer left in dir: the temporary files that isTemp says are ours, and only
// those that no live writer holds (atomicfile.RemoveStale). A file it cannot remove is logged, not an error: it
// is litter, not the writer's problem.
func cleanTemps(ctx context.Context, dir string, isTemp func(string) bool) {
	removed, err := atomicfile.RemoveStale(dir, isTemp)
	for _, p := range removed {
		engine.Logger(ctx).Info("removed a temporary file a killed kubeup left", "path", p)
	}
	if err != nil {
		engine.Logger(ctx).Warn("cannot remove a temporary file a killed kubeup left", "error", err)
	}
}
