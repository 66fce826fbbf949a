package statestore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// The file:// store's temporary files are named .<object>.tmp-<digits>, beside their object. A writer holds an
// exclusive flock on its temporary file from its creation to its rename, so a temporary file that can be
// flocked without waiting belongs to no live writer: one that was killed left it. Such stale files are removed
// by the next write in their directory and by deletes (so that they do not keep a deleted cluster's
// directories alive). A file of any other name is never touched.
var tempName = regexp.MustCompile(`^\..+\.tmp-[0-9]+$`)

// createTemp creates and flocks the temporary file for the object name. A cleaner may remove the file between
// its creation and the flock; then the file has no name any more, and another is made.
func createTemp(name string) (*os.File, error) {
	for {
		f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
		if err != nil {
			return nil, unwrapPathError(err)
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

// removeStale removes the stale temporary files in dir (not below it). Failures are ignored: a file that
// stays is retried by the next write.
func removeStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type().IsRegular() && tempName.MatchString(e.Name()) {
			removeIfStale(filepath.Join(dir, e.Name()))
		}
	}
}

func removeIfStale(name string) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscallNoFollow, 0)
	if err != nil {
		return
	}
	defer f.Close() // releases the lock, after the removal
	if locked, err := tryLock(f); err != nil || !locked {
		return // a live writer's
	}
	os.Remove(name)
}

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
