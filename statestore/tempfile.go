package statestore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"kubeup.dev/kubeup/internal/atomicfile"
)

// The file:// store's temporary files are atomicfile's (.<object>.tmp-<digits>, flocked by their writer until
// renamed): stale ones, a killed writer's, are removed by the next write in their directory and by deletes (so
// that they do not keep a deleted cluster's directories alive). A file of any other name is never touched.

// removeStale removes the stale temporary files in dir (not below it). Failures are ignored: a file that
// stays is retried by the next write.
func removeStale(dir string) { _, _ = atomicfile.RemoveStale(dir, atomicfile.IsTemp) }

// prune removes the stale temporary files in dir and in every directory below it, and the directories below
// it that this leaves empty. dir itself stays.
func prune(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			sub := filepath.Join(dir, e.Name())
			prune(sub)
			if err := os.Remove(sub); err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue // not empty: it holds objects, or a live writer's file
			}
		}
	}
	removeStale(dir)
}
