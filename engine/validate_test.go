package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
)

// items builds n items named a, b, c, ... with no dependencies.
func items(names ...string) map[string]*Item {
	m := map[string]*Item{}
	for _, n := range names {
		m[n] = &Item{Name: n}
	}
	return m
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		build  func(g *engine.Graph[*World])
		target engine.Target
		want   []string // the problems, in order; nil: valid
	}{
		{
			name: "valid chain",
			build: func(g *engine.Graph[*World]) {
				a := engine.Add(g, &Item{Name: "a"})
				engine.Add(g, &Item{Name: "b", Parent: a})
			},
		},
		{
			name: "conflicting duplicate names the differing fields",
			build: func(g *engine.Graph[*World]) {
				engine.Add(g, &Item{Name: "a", Size: ptr(1), Labels: map[string]string{"x": "1"}})
				engine.Add(g, &Item{Name: "a", Size: ptr(2), Labels: map[string]string{"x": "2"}})
			},
			want: []string{"duplicate key Item/a: added twice with different values (Size differs, Labels differs)"},
		},
		{
			name: "missing dependency names both tasks",
			build: func(g *engine.Graph[*World]) {
				engine.Add(g, &Item{Name: "b", Parent: &Item{Name: "a"}})
			},
			want: []string{"Item/b depends on Item/a, which is not in the graph"},
		},
		{
			name: "dependency that differs from the task in the graph",
			build: func(g *engine.Graph[*World]) {
				engine.Add(g, &Item{Name: "a", Size: ptr(1)})
				engine.Add(g, &Item{Name: "b", Parent: &Item{Name: "a", Size: ptr(9)}})
			},
			want: []string{"Item/b depends on a copy of Item/a, not the task in the graph (Size differs): depend on the task engine.Add returned, the one that receives the outputs"},
		},
		{
			name: "an equal copy of a dependency would never see the outputs",
			build: func(g *engine.Graph[*World]) {
				engine.Add(g, &Item{Name: "a", Size: ptr(1)})
				engine.Add(g, &Item{Name: "b", Parent: &Item{Name: "a", Size: ptr(1)}})
			},
			want: []string{"Item/b depends on a copy of Item/a, not the task in the graph: depend on the task engine.Add returned, the one that receives the outputs"},
		},
		{
			name: "duplicates must agree on dependencies and options too",
			build: func(g *engine.Graph[*World]) {
				a := engine.Add(g, &Item{Name: "a"})
				engine.Add(g, &Item{Name: "x"})
				engine.Add(g, &Item{Name: "x", Parent: a})
				engine.Add(g, &Item{Name: "y"})
				engine.Add(g, &Item{Name: "y"}, engine.WithLifecycle(engine.Ignore))
			},
			want: []string{
				"duplicate key Item/x: added twice with different values (dependencies differ)",
				"duplicate key Item/y: added twice with different values (options differ)",
			},
		},
		{
			name: "every problem at once",
			build: func(g *engine.Graph[*World]) {
				engine.Add(g, &Item{Name: "b", Parent: &Item{Name: "a"}})
				engine.Add(g, &Item{Name: "c", Needs: []*Item{{Name: "x"}, {Name: "y"}}})
				engine.Add(g, &Probe{Name: "p"})
			},
			target: engine.Apply,
			want: []string{
				"Item/b depends on Item/a, which is not in the graph",
				"Item/c depends on Item/x, which is not in the graph",
				"Item/c depends on Item/y, which is not in the graph",
				"Probe/p cannot render to target apply: *engine_test.Probe has no method Render(ctx, world, actual, expected, changes) (give it one, or a lifecycle that does not render)",
			},
		},
		{
			name:   "a task without Render is fine in a dry run",
			build:  func(g *engine.Graph[*World]) { engine.Add(g, &Probe{Name: "p"}) },
			target: engine.DryRun,
		},
		{
			name: "a task without Render is fine with a lifecycle that never renders",
			build: func(g *engine.Graph[*World]) {
				engine.Add(g, &Probe{Name: "p"}, engine.WithLifecycle(engine.ExistsAndValidates))
				engine.Add(g, &Probe{Name: "q"})
				g.SetLifecycle("Probe", engine.ExistsAndWarnIfChanges)
			},
			target: engine.Apply,
		},
		{
			name: "self loop",
			build: func(g *engine.Graph[*World]) {
				a := &Item{Name: "a"}
				a.Parent = a
				engine.Add(g, a)
			},
			want: []string{"dependency cycle: Item/a -> Item/a"},
		},
		{
			name: "two-cycle",
			build: func(g *engine.Graph[*World]) {
				m := items("a", "b")
				m["a"].Parent, m["b"].Parent = m["b"], m["a"]
				engine.Add(g, m["b"])
				engine.Add(g, m["a"])
			},
			want: []string{"dependency cycle: Item/a -> Item/b -> Item/a"},
		},
		{
			name: "the shortest cycle of a tangle, from its smallest key",
			build: func(g *engine.Graph[*World]) {
				// d -> e -> f -> g -> d is long; f -> g -> f is the short one. a -> d leads into it.
				m := items("a", "d", "e", "f", "g")
				m["a"].Parent = m["d"]
				m["d"].Parent = m["e"]
				m["e"].Parent = m["f"]
				m["f"].Parent = m["g"]
				m["g"].Needs = []*Item{m["d"], m["f"]}
				for _, n := range []string{"g", "f", "e", "d", "a"} {
					engine.Add(g, m[n])
				}
			},
			want: []string{"dependency cycle: Item/f -> Item/g -> Item/f"},
		},
		{
			name: "cycle behind valid tasks",
			build: func(g *engine.Graph[*World]) {
				m := items("root", "x", "y", "z", "w")
				m["x"].Parent = m["root"]
				m["y"].Needs = []*Item{m["x"], m["z"]}
				m["z"].Needs = []*Item{m["w"]}
				m["w"].Needs = []*Item{m["y"]}
				for _, n := range []string{"root", "x", "y", "z", "w"} {
					engine.Add(g, m[n])
				}
			},
			want: []string{"dependency cycle: Item/w -> Item/y -> Item/z -> Item/w"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := engine.NewGraph[*World]()
			tt.build(g)
			target := tt.target
			if target == "" {
				target = engine.Apply
			}
			err := g.Validate(target)
			var got []string
			if err != nil {
				var ve *engine.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("error %v is not a *ValidationError", err)
				}
				got = ve.Problems
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A graph that does not validate is refused before the engine reads or changes anything.
func TestInvalidGraphTouchesNothing(t *testing.T) {
	world := newWorld()
	g := engine.NewGraph[*World]()
	a, b := &Item{Name: "a", Size: ptr(1)}, &Item{Name: "b", Size: ptr(1)}
	a.Parent, b.Parent = b, a
	engine.Add(g, a)
	engine.Add(g, b)
	engine.Add(g, &Item{Name: "independent", Size: ptr(1)})
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		_, err := engine.Run(context.Background(), g, world, engine.Options{Target: target})
		if err == nil || err.Error() != "invalid task graph: dependency cycle: Item/a -> Item/b -> Item/a" {
			t.Errorf("%s: err = %v, want the cycle", target, err)
		}
	}
	if n := world.total(world.finds) + world.total(world.renders); n != 0 {
		t.Errorf("%d Find/Render calls on an invalid graph, want 0", n)
	}
}

func TestUnknownTarget(t *testing.T) {
	g := engine.NewGraph[*World]()
	_, err := engine.Run(context.Background(), g, newWorld(), engine.Options{Target: "terraform"})
	if err == nil || !contains(err.Error(), `unknown target "terraform"`) {
		t.Errorf("err = %v, want unknown target", err)
	}
}

func TestParseLifecycle(t *testing.T) {
	for _, l := range []engine.Lifecycle{engine.Sync, engine.Ignore, engine.WarnIfInsufficientAccess,
		engine.ExistsAndValidates, engine.ExistsAndWarnIfChanges} {
		got, err := engine.ParseLifecycle(l.String())
		if err != nil || got != l {
			t.Errorf("ParseLifecycle(%q) = %v, %v", l, got, err)
		}
	}
	if _, err := engine.ParseLifecycle("Sometimes"); err == nil {
		t.Error("ParseLifecycle accepted an unknown name")
	}
}

type badTag struct {
	Name  string
	Zones string `kubeup:"set"`
}

func (b *badTag) Key() engine.Key                                      { return engine.Key{Type: "BadTag", Name: b.Name} }
func (b *badTag) Deps() []engine.Task                                  { return nil }
func (b *badTag) Find(context.Context, *World) (*badTag, error)        { return nil, nil }
func (b *badTag) CheckChanges(actual, expected, changes *badTag) error { return nil }

// A malformed tag is a programmer's error: it panics when the task is added, not in the middle of a run.
func TestBadTagPanicsAtAdd(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !contains(fmt.Sprint(r), "badTag.Zones: only a slice can be a set") {
			t.Errorf("recover() = %v, want a panic naming the field", r)
		}
	}()
	engine.Add(engine.NewGraph[*World](), &badTag{Name: "x"})
}

// Pathed is a task with a static rule: its path must be absolute. It records every Find and Render.
type Pathed struct {
	Path string
}

var (
	_ engine.Resource[*Pathed, *World] = (*Pathed)(nil)
	_ engine.Renderer[*Pathed, *World] = (*Pathed)(nil)
	_ engine.Validator                 = (*Pathed)(nil)
)

func (p *Pathed) Key() engine.Key     { return engine.Key{Type: "Pathed", Name: p.Path} }
func (p *Pathed) Deps() []engine.Task { return nil }
func (p *Pathed) Validate() error {
	if !strings.HasPrefix(p.Path, "/") {
		return fmt.Errorf("field Path: %q is not absolute: start it with /", p.Path)
	}
	return nil
}
func (p *Pathed) Find(ctx context.Context, w *World) (*Pathed, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finds[p.Path]++
	return nil, nil
}
func (p *Pathed) CheckChanges(actual, expected, changes *Pathed) error { return nil }
func (p *Pathed) Render(ctx context.Context, w *World, actual, expected, changes *Pathed) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.renders[p.Path]++
	return nil
}

// One task whose static rules fail stops the whole graph before any task is read or changed, and every such
// task is named.
func TestValidatorStopsTheRunBeforeAnything(t *testing.T) {
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		world := newWorld()
		g := engine.NewGraph[*World]()
		engine.Add(g, &Pathed{Path: "/etc/good"})
		engine.Add(g, &Pathed{Path: "relative"})
		engine.Add(g, &Pathed{Path: "../up"})
		engine.Add(g, &Item{Name: "independent", Size: ptr(1)})
		_, err := engine.Run(context.Background(), g, world, engine.Options{Target: target})
		var ve *engine.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: err = %v, want a *ValidationError", target, err)
		}
		want := []string{
			`Pathed/relative: field Path: "relative" is not absolute: start it with /`,
			`Pathed/../up: field Path: "../up" is not absolute: start it with /`,
		}
		if diff := cmp.Diff(want, ve.Problems); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", target, diff)
		}
		if n := world.total(world.finds) + world.total(world.renders); n != 0 {
			t.Errorf("%s: %d Find/Render calls on a graph with an invalid task, want 0", target, n)
		}
	}
}
