package storetasks

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// ListDeleter is what StaleObjects needs of a store besides Store: the state store (statestore.Store) offers it.
type ListDeleter interface {
	// List returns the path of every object under the directory prefix, at any depth, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes the object; an absent object is not an error.
	Delete(ctx context.Context, path string) error
}

// StaleObjects deletes the objects directly under the directory Prefix of the state store whose name is not one of
// Objects: the node configurations (<cluster>/nodeup/<group>) of instance groups removed from the spec. Objects
// deeper under Prefix, and everything outside it, are never touched. It runs after the tasks of After (the
// configurations it keeps are written first). Its key is "StoreStaleObjects/<Prefix>".
type StaleObjects[C World] struct {
	// Prefix is a directory of the store ("demo.example.com/nodeup"), and the task's name.
	Prefix string
	// Objects are the names (the last path element) of the objects under Prefix to keep. Found: the same, and the
	// names of the objects under Prefix that are not kept, which Render deletes (a plan shows them as removed).
	Objects []string `kubeup:"set,nilempty"`
	// After lists tasks to run first: ordering only.
	After []engine.Task `kubeup:"-"`

	stale []string // found: the objects' names to delete, sorted
}

func (s *StaleObjects[C]) Key() engine.Key {
	return engine.Key{Type: "StoreStaleObjects", Name: s.Prefix}
}

func (s *StaleObjects[C]) Deps() []engine.Task { return s.After }

// Find lists Prefix. A store that cannot list (an in-memory test store) has nothing stale.
func (s *StaleObjects[C]) Find(ctx context.Context, world C) (*StaleObjects[C], error) {
	a := &StaleObjects[C]{Prefix: s.Prefix, Objects: slices.Clone(s.Objects)}
	ld, ok := world.StateStore().(ListDeleter)
	if !ok {
		return a, nil
	}
	paths, err := ld.List(ctx, s.Prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s in the state store: %w", s.Prefix, err)
	}
	for _, p := range paths {
		name, ok := strings.CutPrefix(p, strings.TrimSuffix(s.Prefix, "/")+"/")
		if !ok || name == "" || strings.Contains(name, "/") || slices.Contains(s.Objects, name) {
			continue
		}
		a.stale = append(a.stale, name)
	}
	slices.Sort(a.stale)
	a.Objects = append(a.Objects, a.stale...)
	return a, nil
}

// CheckChanges requires a prefix other than the store's root, and names without a slash.
func (s *StaleObjects[C]) CheckChanges(actual, expected, changes *StaleObjects[C]) error {
	if strings.Trim(expected.Prefix, "/") == "" {
		return errors.New("store stale objects: field Prefix is required (a directory of the store, never its root)")
	}
	for _, k := range expected.Objects {
		if k == "" || strings.Contains(k, "/") {
			return fmt.Errorf("store stale objects %s: field Objects: %q is not an object's name", expected.Prefix, k)
		}
	}
	return nil
}

// Render deletes the objects found stale.
func (s *StaleObjects[C]) Render(ctx context.Context, world C, actual, expected, changes *StaleObjects[C]) error {
	if actual == nil || len(actual.stale) == 0 {
		return nil
	}
	ld, ok := world.StateStore().(ListDeleter)
	if !ok {
		return engine.Terminal(fmt.Errorf("deleting under %s: the state store cannot delete objects", expected.Prefix))
	}
	for _, name := range actual.stale {
		p := path.Join(expected.Prefix, name)
		if err := ld.Delete(ctx, p); err != nil {
			return fmt.Errorf("deleting %s from the state store (its instance group is no longer in the spec): %w", p, err)
		}
		engine.Logger(ctx).Info("deleted state store object that the spec no longer asks for", "path", p)
	}
	return nil
}
