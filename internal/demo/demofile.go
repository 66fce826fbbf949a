package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"kubeup.dev/kubeup/engine"
)

// DemoFile is a regular file in a Dir with the given contents and permission bits, written atomically.
type DemoFile struct {
	// Path is the file's path relative to the Dir, and the task's name.
	Path string
	// Contents is the whole content of the file; nil leaves it as it is.
	Contents *string
	// Mode holds the file's permission bits; nil leaves them as they are (0644 when the file is created).
	Mode *os.FileMode
	// After lists the files to write first: ordering only, not part of the file's state.
	After []*DemoFile `kubeup:"-"`
}

var (
	_ engine.Resource[*DemoFile, *Dir] = (*DemoFile)(nil)
	_ engine.Renderer[*DemoFile, *Dir] = (*DemoFile)(nil)
)

const defaultMode os.FileMode = 0o644

func (f *DemoFile) Key() engine.Key { return engine.Key{Type: "DemoFile", Name: f.Path} }

func (f *DemoFile) Deps() []engine.Task {
	deps := make([]engine.Task, 0, len(f.After))
	for _, d := range f.After {
		deps = append(deps, d)
	}
	return deps
}

// Find reads the file back. It returns nil when the file does not exist, and normalises what it reads the way
// the task states it: the contents as a string, the mode as permission bits only.
func (f *DemoFile) Find(ctx context.Context, d *Dir) (*DemoFile, error) {
	p, err := d.path(f.Path)
	if err != nil {
		return nil, err
	}
	info, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s exists but is not a regular file (mode %v): remove it or choose another path",
			p, info.Mode())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	contents, mode := string(b), info.Mode().Perm()
	return &DemoFile{Path: f.Path, Contents: &contents, Mode: &mode}, nil
}

func (f *DemoFile) CheckChanges(actual, expected, changes *DemoFile) error {
	if actual == nil && expected.Contents == nil {
		return fmt.Errorf("file %s: Contents is required to create the file", expected.Path)
	}
	if expected.Mode != nil && *expected.Mode&^fs.ModePerm != 0 {
		return fmt.Errorf("file %s: Mode %v has bits other than permissions: only 0777 bits can be set",
			expected.Path, *expected.Mode)
	}
	return nil
}

// Render writes the whole file again, atomically, with what expected says and what actual has where expected
// does not care.
func (f *DemoFile) Render(ctx context.Context, d *Dir, actual, expected, changes *DemoFile) error {
	p, err := d.path(expected.Path)
	if err != nil {
		return err
	}
	contents, mode := "", defaultMode
	if actual != nil {
		contents, mode = *actual.Contents, *actual.Mode
	}
	if expected.Contents != nil {
		contents = *expected.Contents
	}
	if expected.Mode != nil {
		mode = *expected.Mode
	}
	if err := writeFileAtomic(p, []byte(contents), mode); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	engine.Logger(ctx).Info("wrote file", "path", p, "bytes", len(contents), "mode", mode)
	return nil
}

// writeFileAtomic replaces the file at path with data and mode so that a reader sees either the old file or
// the new one, never a part: it writes a temporary file in the same directory, syncs it, renames it over path
// and syncs the directory.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil { // Chmod, unlike create, is not subject to the umask
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
