package engine_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"kubeup.dev/kubeup/engine"
)

// World is the fake world of the engine's tests: stored items, and counters of what the engine did to it.
type World struct {
	mu      sync.Mutex
	items   map[string]Item
	finds   map[string]int
	renders map[string]int
	nextID  int
	changes map[string]Item // the changes Render last received, by name
	// hooks, by item name, called at the start of Find and Render; their error is returned
	findHook   map[string]func(ctx context.Context, attempt int) error
	renderHook map[string]func(ctx context.Context) error
}

func newWorld(items ...Item) *World {
	w := &World{items: map[string]Item{}, finds: map[string]int{}, renders: map[string]int{}, changes: map[string]Item{},
		findHook: map[string]func(context.Context, int) error{}, renderHook: map[string]func(context.Context) error{}}
	for _, it := range items {
		w.items[it.Name] = it.clone()
	}
	return w
}

func (w *World) count(m map[string]int, name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return m[name]
}

func (w *World) total(m map[string]int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// Item is the test task: one of each kind of field the engine compares.
type Item struct {
	Name     string
	Size     *int
	Contents *string
	Labels   map[string]string
	Zones    []string          `kubeup:"set"`
	Tags     map[string]string `kubeup:"nilempty"`
	Order    []string
	Password *engine.Secret
	Parent   *Item   `kubeup:"-"`
	Needs    []*Item `kubeup:"-"`
	ParentID *string // copied from Parent.ID by Render: shows outputs flowing to dependents
	ID       *string `kubeup:"output"`
	Class    string  `kubeup:"-"`
}

var (
	_ engine.Resource[*Item, *World] = (*Item)(nil)
	_ engine.Renderer[*Item, *World] = (*Item)(nil)
	_ engine.Classed                 = (*Item)(nil)
)

func (it Item) clone() Item {
	c := it
	c.Labels = maps.Clone(it.Labels)
	c.Tags = maps.Clone(it.Tags)
	c.Zones = slices.Clone(it.Zones)
	c.Order = slices.Clone(it.Order)
	c.Parent, c.Needs = nil, nil
	return c
}

func (it *Item) Key() engine.Key  { return engine.Key{Type: "Item", Name: it.Name} }
func (it *Item) APIClass() string { return it.Class }

func (it *Item) Deps() []engine.Task {
	var deps []engine.Task
	if it.Parent != nil {
		deps = append(deps, it.Parent)
	}
	for _, n := range it.Needs {
		deps = append(deps, n)
	}
	return deps
}

func (it *Item) Find(ctx context.Context, w *World) (*Item, error) {
	w.mu.Lock()
	w.finds[it.Name]++
	attempt := w.finds[it.Name]
	hook := w.findHook[it.Name]
	w.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, attempt); err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	stored, ok := w.items[it.Name]
	if !ok {
		return nil, nil
	}
	found := stored.clone()
	return &found, nil
}

func (it *Item) CheckChanges(actual, expected, changes *Item) error {
	if actual != nil && changes.Size != nil && *changes.Size < *actual.Size {
		return fmt.Errorf("Size: cannot shrink from %d to %d", *actual.Size, *changes.Size)
	}
	return nil
}

func (it *Item) Render(ctx context.Context, w *World, actual, expected, changes *Item) error {
	w.mu.Lock()
	w.renders[it.Name]++
	w.changes[it.Name] = *changes
	hook := w.renderHook[it.Name]
	w.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if expected.ID == nil {
		w.nextID++
		expected.ID = ptr(fmt.Sprintf("id-%d", w.nextID))
	}
	if expected.Parent != nil {
		expected.ParentID = expected.Parent.ID
	}
	stored := w.items[it.Name]
	if actual == nil {
		stored = expected.clone()
	} else {
		// apply only what changed, as a real API call would
		if changes.Size != nil {
			stored.Size = changes.Size
		}
		if changes.Contents != nil {
			stored.Contents = changes.Contents
		}
		if changes.Labels != nil {
			stored.Labels = maps.Clone(changes.Labels)
		}
		if changes.Zones != nil {
			stored.Zones = slices.Clone(changes.Zones)
		}
		if changes.Tags != nil {
			stored.Tags = maps.Clone(changes.Tags)
		}
		if changes.Order != nil {
			stored.Order = slices.Clone(changes.Order)
		}
		if changes.Password != nil {
			stored.Password = changes.Password
		}
		if changes.ParentID != nil {
			stored.ParentID = changes.ParentID
		}
	}
	stored.ID = expected.ID
	w.items[it.Name] = stored
	return nil
}

// Probe is a task that can only be found, never rendered: the shape of a data source.
type Probe struct {
	Name string
	Want *string
}

var _ engine.Resource[*Probe, *World] = (*Probe)(nil)

func (p *Probe) Key() engine.Key     { return engine.Key{Type: "Probe", Name: p.Name} }
func (p *Probe) Deps() []engine.Task { return nil }

func (p *Probe) Find(ctx context.Context, w *World) (*Probe, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finds["probe:"+p.Name]++
	it, ok := w.items[p.Name]
	if !ok {
		return nil, nil
	}
	return &Probe{Name: p.Name, Want: it.Contents}, nil
}

func (p *Probe) CheckChanges(actual, expected, changes *Probe) error { return nil }
