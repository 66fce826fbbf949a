package localtasks

import (
	"context"
	"fmt"
	"io/fs"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
)

// writeAtomic replaces path with data (atomicfile.Write: a flocked temporary file ".NAME.tmp-DIGITS" beside
// it, synced, renamed over path, the directory synced), its error classified for the engine.
func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	if err := atomicfile.Write(path, data, perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, engine.FileError(err))
	}
	return nil
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
