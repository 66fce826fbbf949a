package storetasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"kubeup.dev/kubeup/engine"
)

// File is an object in the state store with the given contents: the node configuration of an instance group
// (its sha256 on its first line), which nodeup reads at boot. It is generic over the world so that every cloud's graph can
// hold it: engine.Add(g, &storetasks.File[*localtasks.Cloud]{...}).
type File[C World] struct {
	// Path is the object's path in the store ("demo.example.com/nodeup/nodes"), and the task's name.
	Path string
	// Contents is the object's whole content.
	Contents *string
	// After lists tasks to run first: ordering only, not part of the object's state.
	After []engine.Task `kubeup:"-"`
}

func (f *File[C]) Key() engine.Key { return engine.Key{Type: "StoreFile", Name: f.Path} }

func (f *File[C]) Deps() []engine.Task { return f.After }

// Find reads the object back; nil when it does not exist.
func (f *File[C]) Find(ctx context.Context, world C) (*File[C], error) {
	b, err := world.StateStore().ReadFile(ctx, f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	contents := string(b)
	return &File[C]{Path: f.Path, Contents: &contents}, nil
}

func (f *File[C]) CheckChanges(actual, expected, changes *File[C]) error {
	if expected.Contents == nil {
		return fmt.Errorf("store file %s: Contents is required", expected.Path)
	}
	return nil
}

// Render writes the whole object, atomically (the store guarantees it).
func (f *File[C]) Render(ctx context.Context, world C, actual, expected, changes *File[C]) error {
	if err := world.StateStore().WriteFile(ctx, expected.Path, []byte(*expected.Contents)); err != nil {
		return fmt.Errorf("writing %s to the state store: %w", expected.Path, err)
	}
	return nil
}
