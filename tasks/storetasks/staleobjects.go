package storetasks

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/removedgroups"
)

// ListDeleter is what StaleObjects needs of a store besides Store: the state store (statestore.Store) offers it.
type ListDeleter interface {
	// List returns the path of every object under the directory prefix, at any depth, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes the object; an absent object is not an error.
	Delete(ctx context.Context, path string) error
}

// StaleObjects is what the instance groups removed from the spec leave in the state store: the objects directly
// under the directory Prefix whose name is not one of Keep, the node configurations (<cluster>/nodeup/<group>)
// of groups no longer in the spec. Objects deeper under Prefix, and everything outside it, are never touched.
//
// It is no task of the graph: a task's change is one change of its own key, and a reviewer must read each object
// a run deletes. The caller runs it after the graph (cloudup: the dry run adds Deletions to its plan, one
// "delete StoreFile/<path>" each; an apply then calls Delete), so that the kept configurations are written first.
type StaleObjects[C World] struct {
	// Prefix is a directory of the store ("demo.example.com/nodeup"), never its root.
	Prefix string
	// Keep are the names (the last path element) of the objects under Prefix to keep: the spec's groups.
	Keep []string
	// Note, when set, says why the object of a name goes (the plan's note), or "" for the default: the instance
	// group of that name is no longer in the spec.
	Note func(name string) string
}

// find lists Prefix and returns the stale objects, sorted. A store that cannot list (an in-memory test store) has
// nothing stale.
func (s *StaleObjects[C]) find(ctx context.Context, world C) ([]removedgroups.Object, error) {
	if strings.Trim(s.Prefix, "/") == "" {
		return nil, engine.Terminal(errors.New("store stale objects: the prefix is required (a directory of the store, never its root)"))
	}
	for _, k := range s.Keep {
		if k == "" || strings.Contains(k, "/") {
			return nil, engine.Terminal(fmt.Errorf("store stale objects %s: %q is not an object's name", s.Prefix, k))
		}
	}
	ld, ok := world.StateStore().(ListDeleter)
	if !ok {
		return nil, nil
	}
	paths, err := ld.List(ctx, s.Prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s in the state store: %w", s.Prefix, err)
	}
	var out []removedgroups.Object // an object's name is its group's
	for _, p := range paths {
		name, ok := strings.CutPrefix(p, strings.TrimSuffix(s.Prefix, "/")+"/")
		if !ok || name == "" || strings.Contains(name, "/") || slices.Contains(s.Keep, name) {
			continue
		}
		o := removedgroups.Object{Key: engine.Key{Type: "StoreFile", Name: path.Join(s.Prefix, name)}, Group: name}
		if s.Note != nil {
			o.Note = s.Note(name)
		}
		out = append(out, o)
	}
	return removedgroups.Sorted(nil, out), nil
}

// Deletions returns what Delete would delete now, as the plan's deletions (the store is listed each time: fresh
// changes nothing).
func (s *StaleObjects[C]) Deletions(ctx context.Context, world C, _ bool) ([]engine.Change, error) {
	found, err := s.find(ctx, world)
	return removedgroups.Deletions(found), err
}

// Delete deletes, of planned (Deletions' answer in the dry run), what is still there. What it finds that planned
// does not hold is left for the next run, whose dry run lists it. It returns the deletions done, also when it
// fails.
func (s *StaleObjects[C]) Delete(ctx context.Context, world C, planned []engine.Change) ([]engine.Change, error) {
	found, err := s.find(ctx, world)
	if err != nil {
		return nil, err
	}
	var done []engine.Change
	for _, o := range removedgroups.Planned(found, planned) {
		if err := world.StateStore().(ListDeleter).Delete(ctx, o.Key.Name); err != nil {
			return done, fmt.Errorf("deleting %s from the state store (instance group %s is no longer in the spec): %w", o.Key.Name, o.Group, err)
		}
		done = append(done, o.Change())
	}
	return done, nil
}
