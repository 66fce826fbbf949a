package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
)

// pendingID is what Derived states for a parent that has no ID yet (a dry run's): no stored item holds it.
const pendingID = "(pending)"

// Derived is a Resolver: its Value is made from its parent's output, an Item's ID, as a node configuration is
// made from the certificates its keypairs issued. It is stored in the world as an item named "derived-<Name>".
type Derived struct {
	Name   string
	Parent *Item `kubeup:"-"`
	Value  *string
	// Resolved records, for each call of Resolve, whether the parent was done (its ID set) and what it read.
	Resolved *resolveLog `kubeup:"-"`
	// Fail, when set, is Resolve's error.
	Fail error `kubeup:"-"`
}

type resolveLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *resolveLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *resolveLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

var (
	_ engine.Resource[*Derived, *World] = (*Derived)(nil)
	_ engine.Renderer[*Derived, *World] = (*Derived)(nil)
	_ engine.Resolver                   = (*Derived)(nil)
)

func (d *Derived) Key() engine.Key     { return engine.Key{Type: "Derived", Name: d.Name} }
func (d *Derived) Deps() []engine.Task { return []engine.Task{d.Parent} }

func (d *Derived) Resolve() error {
	if d.Fail != nil {
		return d.Fail
	}
	id := pendingID
	if d.Parent.ID != nil {
		id = *d.Parent.ID
	}
	d.Resolved.add(id)
	d.Value = ptr("parent " + id)
	return nil
}

func (d *Derived) Find(ctx context.Context, w *World) (*Derived, error) {
	w.mu.Lock()
	w.finds["derived-"+d.Name]++
	attempt := w.finds["derived-"+d.Name]
	hook := w.findHook["derived-"+d.Name]
	w.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, attempt); err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	it, ok := w.items["derived-"+d.Name]
	if !ok {
		return nil, nil
	}
	return &Derived{Name: d.Name, Value: it.Contents}, nil
}

func (d *Derived) CheckChanges(actual, expected, changes *Derived) error { return nil }

func (d *Derived) Render(ctx context.Context, w *World, actual, expected, changes *Derived) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.renders["derived-"+d.Name]++
	w.items["derived-"+d.Name] = Item{Name: "derived-" + d.Name, Contents: expected.Value}
	return nil
}

func derivedGraph(log *resolveLog) func() *engine.Graph[*World] {
	return func() *engine.Graph[*World] {
		g := engine.NewGraph[*World]()
		parent := engine.Add(g, &Item{Name: "parent", Size: ptr(1)})
		engine.Add(g, &Derived{Name: "child", Parent: parent, Resolved: log})
		return g
	}
}

func planText(t *testing.T, p *engine.Plan) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestResolverAfterDependencies: Resolve runs once the dependencies are done and reads their outputs; the value
// it makes is compared like any field, so a second run finds nothing to change and drift is put right.
func TestResolverAfterDependencies(t *testing.T) {
	ctx := context.Background()
	w := newWorld()
	log := &resolveLog{}

	// A dry run on an empty world: the parent is to be created and has no ID; the child states the placeholder.
	res, err := engine.Run(ctx, derivedGraph(log)(), w, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	text := planText(t, res.Plan)
	if !contains(text, "Derived/child\n    Value    parent (pending)") || len(res.Plan.Changes) != 2 {
		t.Errorf("dry run plan:\n%s\nwant the parent created and the child with its placeholder", text)
	}

	// The apply: Resolve reads the ID the parent's Render wrote.
	res, err = engine.Run(ctx, derivedGraph(log)(), w, engine.Options{Target: engine.Apply})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 2 {
		t.Errorf("the apply made %d changes, want the 2 the dry run announced", len(res.Plan.Changes))
	}
	if got := log.get(); len(got) != 2 || got[1] != "id-1" {
		t.Errorf("Resolve read %q, want the placeholder (dry run) then id-1 (apply)", got)
	}
	if got := w.items["derived-child"].Contents; got == nil || *got != "parent id-1" {
		t.Errorf("the world holds %v, want the value made from the parent's ID", got)
	}

	// A dry run after the apply: the parent is found with its ID (an output Find copies), the child's value is
	// made from it and is what the world holds.
	res, err = engine.Run(ctx, derivedGraph(log)(), w, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan.Empty() {
		t.Errorf("the dry run after the apply plans changes:\n%s", planText(t, res.Plan))
	}

	// Drift: the stored value differs from what the parent's output makes; the change shows both.
	w.items["derived-child"] = Item{Name: "derived-child", Contents: ptr("parent id-0")}
	res, err = engine.Run(ctx, derivedGraph(log)(), w, engine.Options{Target: engine.Apply})
	if err != nil {
		t.Fatal(err)
	}
	if text := planText(t, res.Plan); !contains(text, "Value    parent id-0 -> parent id-1") {
		t.Errorf("after drift, the plan:\n%s", text)
	}
	if got := w.items["derived-child"].Contents; *got != "parent id-1" {
		t.Errorf("after drift, the world holds %q", *got)
	}
}

// TestResolverBeforeEachFind: a retried task resolves again before each Find, so each attempt compares what its
// dependencies hold then.
func TestResolverBeforeEachFind(t *testing.T) {
	w := newWorld()
	w.findHook["derived-child"] = func(_ context.Context, attempt int) error {
		if attempt < 3 {
			return engine.NotReady(fmt.Errorf("attempt %d: not yet", attempt))
		}
		return nil
	}
	log := &resolveLog{}
	_, err := engine.Run(context.Background(), derivedGraph(log)(), w,
		engine.Options{Target: engine.Apply, Backoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got, finds := log.get(), w.count(w.finds, "derived-child"); len(got) != 3 || finds != 3 {
		t.Errorf("Resolve called %d times (%q), Find %d times: want once before each Find", len(got), got, finds)
	}
}

// TestResolverError: an error of Resolve fails the task before its Find, and skips its dependents.
func TestResolverError(t *testing.T) {
	w := newWorld()
	g := engine.NewGraph[*World]()
	parent := engine.Add(g, &Item{Name: "parent", Size: ptr(1)})
	engine.Add(g, &Derived{Name: "child", Parent: parent, Resolved: &resolveLog{}, Fail: errors.New("no output to make it from")})
	_, err := engine.Run(context.Background(), g, w, engine.Options{Target: engine.Apply})
	var re *engine.RunError
	if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Key.Type != "Derived" ||
		!strings.Contains(err.Error(), "resolving: no output to make it from") {
		t.Fatalf("Run = %v, want the child failed with Resolve's error", err)
	}
	if w.count(w.finds, "derived-child") != 0 || w.count(w.renders, "parent") != 1 {
		t.Errorf("finds of the child %d (want 0), renders of the parent %d (want 1)", w.count(w.finds, "derived-child"), w.count(w.renders, "parent"))
	}
}
