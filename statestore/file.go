package statestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"kubeup.dev/kubeup/internal/atomicfile"
)

const (
	fileMode = 0o600 // objects may hold secrets: readable by the owner only
	dirMode  = 0o755
)

// fileStore keeps each object in a file under root. Reads take no lock (a rename is atomic); every change
// (WriteFile, WriteIf, Delete) holds an exclusive flock on the root directory itself, so that a WriteIf's compare and write are
// one step for every process on the machine, and so that Delete's removal of empty directories never races a
// write that is creating them.
type fileStore struct {
	root string // absolute, clean, OS separators
}

var _ Store = (*fileStore)(nil)

func newFileStore(root string) *fileStore { return &fileStore{root: root} }

func (s *fileStore) URL() string { return "file://" + filepath.ToSlash(s.root) }

func (s *fileStore) loc(p string) string { return location(s.URL(), p) }

func (s *fileStore) file(p string) string { return filepath.Join(s.root, filepath.FromSlash(p)) }

func (s *fileStore) ReadFile(ctx context.Context, p string) ([]byte, error) {
	data, _, err := s.read(p, "reading")
	return data, err
}

func (s *fileStore) Read(ctx context.Context, p string) ([]byte, Generation, error) {
	return s.read(p, "reading")
}

func (s *fileStore) read(p, verb string) ([]byte, Generation, error) {
	if err := CheckPath(p); err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", verb, s.URL(), err)
	}
	data, err := os.ReadFile(s.file(p))
	if err != nil {
		if fi, serr := os.Stat(s.file(p)); serr == nil && fi.IsDir() {
			err = fs.ErrNotExist // a directory is not an object
		}
		return nil, "", fmt.Errorf("%s %s: %w", verb, s.loc(p), unwrapPathError(err))
	}
	return data, fileGeneration(data), nil
}

func (s *fileStore) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := CheckPath(p); err != nil {
		return fmt.Errorf("writing %s: %w", s.URL(), err)
	}
	return s.locked(ctx, func() error {
		if err := writeAtomic(s.file(p), data); err != nil {
			return fmt.Errorf("writing %s: %w", s.loc(p), err)
		}
		removeStale(filepath.Dir(s.file(p)))
		return nil
	})
}

func (s *fileStore) WriteIf(ctx context.Context, p string, data []byte, ifGen Generation) (Generation, error) {
	if err := CheckPath(p); err != nil {
		return "", fmt.Errorf("writing %s: %w", s.URL(), err)
	}
	err := s.locked(ctx, func() error {
		_, cur, err := s.read(p, "writing")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if cur != ifGen {
			return Conflict(s.loc(p), ifGen)
		}
		if err := writeAtomic(s.file(p), data); err != nil {
			return fmt.Errorf("writing %s: %w", s.loc(p), err)
		}
		removeStale(filepath.Dir(s.file(p)))
		return nil
	})
	if err != nil {
		return "", err
	}
	return fileGeneration(data), nil
}

func (s *fileStore) Delete(ctx context.Context, p string) error {
	if err := CheckPath(p); err != nil {
		return fmt.Errorf("deleting %s: %w", s.URL(), err)
	}
	return s.locked(ctx, func() error {
		name := s.file(p)
		if fi, err := os.Lstat(name); err == nil && fi.IsDir() {
			return nil // a directory is not an object: nothing to delete
		}
		if err := os.Remove(name); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("deleting %s: %w", s.loc(p), unwrapPathError(err))
		}
		// Remove the directories this leaves empty, up to (never including) the root, with the stale temporary
		// files and directories of them that would keep them (a cluster's, after its delete). A directory that
		// holds an object (or a live writer's temporary file) stops the walk.
		dir := filepath.Dir(name)
		for dir != s.root && strings.HasPrefix(dir, s.root+string(filepath.Separator)) {
			prune(dir)
			if os.Remove(dir) != nil {
				break
			}
			dir = filepath.Dir(dir)
		}
		if dir == s.root {
			removeStale(dir)
		}
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("deleting %s: %w", s.loc(p), err)
		}
		return nil
	})
}

func (s *fileStore) List(ctx context.Context, prefix string) ([]string, error) {
	prefix, err := checkPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.URL(), err)
	}
	var paths []string
	err = filepath.WalkDir(s.file(prefix), func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && name == s.file(prefix) {
				return fs.SkipAll // nothing under this prefix
			}
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && name != s.root {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil // temporary files
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.root, name)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.loc(prefix), err)
	}
	if prefix != "" {
		// WalkDir on a file visits the file itself: an object named like the prefix is not under it.
		paths = slices.DeleteFunc(paths, func(p string) bool { return !strings.HasPrefix(p, prefix+"/") })
	}
	sort.Strings(paths)
	return paths, nil
}

// Check stats the root: it must be a directory (after symbolic links).
func (s *fileStore) Check(ctx context.Context) error {
	fi, err := os.Stat(s.root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return noStore(s.URL(), "directory")
	case err != nil:
		return fmt.Errorf("state store %s: %w", s.URL(), unwrapPathError(err))
	case !fi.IsDir():
		return fmt.Errorf("state store %s: %s is not a directory", s.URL(), s.root)
	}
	return nil
}

// locked runs fn holding the store's exclusive lock, creating the root if needed. Waiting for the lock does not
// end with ctx (holders only write one file), but fn does not run if ctx ended meanwhile.
func (s *fileStore) locked(ctx context.Context, fn func() error) error {
	if err := os.MkdirAll(s.root, dirMode); err != nil {
		return fmt.Errorf("creating state store %s: %w", s.URL(), err)
	}
	unlock, err := lockDir(s.root)
	if err != nil {
		return fmt.Errorf("locking state store %s: %w", s.URL(), err)
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state store %s: %w", s.URL(), err)
	}
	return fn()
}

// writeAtomic replaces name with data (atomicfile.Write: a flocked temporary file beside it, synced, renamed
// over name, the directory synced), making its directory first: after a crash name holds the old contents or
// the new.
func writeAtomic(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), dirMode); err != nil {
		return unwrapPathError(err)
	}
	return unwrapPathError(atomicfile.Write(name, data, fileMode))
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error { return unwrapPathError(atomicfile.SyncDir(dir)) }

func fileGeneration(data []byte) Generation {
	sum := sha256.Sum256(data)
	return Generation(hex.EncodeToString(sum[:]))
}

// unwrapPathError drops the *fs.PathError around err: the caller's message already names the object.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
