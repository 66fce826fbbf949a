package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Graph is a set of tasks that converge world C, with their dependencies. Build it with NewGraph and Add; run
// it with Run. A Graph is not safe for concurrent Add.
type Graph[C any] struct {
	nodes     []*node[C]
	byKey     map[Key]int32
	byPtr     map[uintptr]int32    // the nodes by their tasks' addresses: how compile finds a dependency
	found     []int32              // the dependencies found as the tasks were added (see node.found)
	problems  []string             // found while adding, reported by Validate
	overrides map[string]Lifecycle // per task type
}

// NewGraph returns an empty graph.
func NewGraph[C any]() *Graph[C] {
	return &Graph[C]{byKey: map[Key]int32{}, byPtr: map[uintptr]int32{}}
}

// node is one task in the graph with what the executor needs to know about it.
type node[C any] struct {
	task      Task
	runner    runner[C]
	lifecycle Lifecycle
	class     string
	deadline  time.Duration // 0: the run's default
	canRender bool          // runner.canRender(), asked once
	// found[k] is the node that was the k-th of task.Deps() when the task was added (g.found[found0:found1]),
	// -1 where it was none of the graph's yet: compile takes a dependency from there when it is still that
	// task, and looks up the others, as the model of kops' waves resolves its pointers when it is built.
	found0, found1 int32
}

// runner is the typed part of a node: it knows the task's type T, so it calls Find, CheckChanges and Render
// without reflection on method names.
type runner[C any] interface {
	sync(ctx context.Context, world C, target Target, lc Lifecycle) (*Change, error)
	canRender() bool
}

// AddOption adjusts how one task is run.
type AddOption func(*addOptions)

type addOptions struct {
	lifecycle Lifecycle
	deadline  time.Duration
}

// WithLifecycle sets the task's lifecycle (default Sync). Graph.SetLifecycle overrides it for a whole type.
func WithLifecycle(l Lifecycle) AddOption { return func(o *addOptions) { o.lifecycle = l } }

// WithDeadline sets how long a not-ready or retryable task is retried (default: Options.Deadline).
func WithDeadline(d time.Duration) AddOption { return func(o *addOptions) { o.deadline = d } }

// Classed is implemented by tasks that call a rate-limited API. Tasks of one class share Options.ClassLimits
// and are slowed down together when the API pushes back.
type Classed interface {
	APIClass() string
}

// Add puts task into g and returns the task the graph holds under its key. Adding a key twice is allowed
// only when both tasks describe the same thing; then the first one is kept and returned, so that dependents
// read the outputs of the task that actually runs. A conflicting duplicate is reported by Validate.
func Add[T Resource[T, C], C any](g *Graph[C], task T, opts ...AddOption) T {
	return add(g, task, &typed[T, C]{task: task, ti: typeInfoOf(structOf(task).Type())}, opts)
}

// AddIn puts into g, a graph of world C, a task of another world W that is a part of C: the engine runs it on
// in(world). One graph and one run can so converge a world made of parts, each with its own task packages: a
// protokube round converges the node (nodetasks, world *nodetasks.Node) and the cloud's volumes and DNS at once.
// in must return the same part every time it is called on one world. Everything else is as with Add.
func AddIn[T Resource[T, W], C, W any](g *Graph[C], in func(C) W, task T, opts ...AddOption) T {
	return add(g, task, &inPart[T, C, W]{typed: typed[T, W]{task: task, ti: typeInfoOf(structOf(task).Type())}, in: in}, opts)
}

func add[T Task, C any](g *Graph[C], task T, r runner[C], opts []AddOption) T {
	typeInfoOf(structOf(task).Type()) // a task is a pointer to a struct with valid tags: panic now, not mid-run
	var o addOptions
	for _, opt := range opts {
		opt(&o)
	}
	key := task.Key()
	if i, ok := g.byKey[key]; ok {
		prev := g.nodes[i]
		var conflicts []string
		if !tasksEqual(prev.task, task) {
			conflicts = differingFields(prev.task, task)
		}
		if !sameKeys(prev.task.Deps(), task.Deps()) {
			conflicts = append(conflicts, "dependencies differ")
		}
		if prev.lifecycle != o.lifecycle || prev.deadline != o.deadline {
			conflicts = append(conflicts, "options differ")
		}
		if len(conflicts) > 0 {
			g.problems = append(g.problems, fmt.Sprintf("duplicate key %s: added twice with different values (%s)",
				key, strings.Join(conflicts, ", ")))
			return task
		}
		if held, ok := prev.task.(T); ok {
			return held
		}
		return task
	}
	n := &node[C]{task: task, runner: r, lifecycle: o.lifecycle, deadline: o.deadline, canRender: r.canRender()}
	n.found0 = int32(len(g.found))
	for _, dep := range task.Deps() {
		g.found = append(g.found, g.nodeAt(dep))
	}
	n.found1 = int32(len(g.found))
	if c, ok := any(task).(Classed); ok {
		n.class = c.APIClass()
	}
	g.byKey[key] = int32(len(g.nodes))
	if p := reflect.ValueOf(task).Pointer(); !hasKey(g.byPtr, p) { // a struct and its first field: the first keeps it
		g.byPtr[p] = int32(len(g.nodes))
	}
	g.nodes = append(g.nodes, n)
	return task
}

// nodeAt is the node whose task is dep, found by its address; -1 when there is none (or dep is nil).
func (g *Graph[C]) nodeAt(dep Task) int32 {
	v := reflect.ValueOf(dep)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return -1
	}
	if j, ok := g.byPtr[v.Pointer()]; ok && g.nodes[j].task == dep {
		return j
	}
	return -1
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// sameKeys reports whether two dependency lists name the same tasks, in any order.
func sameKeys(a, b []Task) bool {
	count := map[Key]int{}
	for _, t := range a {
		if !isNilTask(t) {
			count[t.Key()]++
		}
	}
	for _, t := range b {
		if !isNilTask(t) {
			count[t.Key()]--
		}
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

// differingFields names the fields in which two tasks of one key differ.
func differingFields(a, b Task) []string {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	if av.Type() != bv.Type() {
		return []string{fmt.Sprintf("types %T and %T", a, b)}
	}
	as, bs := structOf(a), structOf(b)
	var names []string
	for _, f := range typeInfoOf(as.Type()).fields {
		if !f.output && !fieldEqual(f, as.Field(f.index), bs.Field(f.index)) {
			names = append(names, f.name+" differs")
		}
	}
	return names
}

// SetLifecycle overrides the lifecycle of every task of one type, as an operator's
// --lifecycle-overrides=EBSVolume=ExistsAndWarnIfChanges would.
func (g *Graph[C]) SetLifecycle(taskType string, l Lifecycle) {
	if g.overrides == nil {
		g.overrides = map[string]Lifecycle{}
	}
	g.overrides[taskType] = l
}

// Len returns the number of tasks in the graph.
func (g *Graph[C]) Len() int { return len(g.nodes) }

// Tasks returns the graph's tasks in the order they were added.
func (g *Graph[C]) Tasks() []Task {
	tasks := make([]Task, len(g.nodes))
	for i, n := range g.nodes {
		tasks[i] = n.task
	}
	return tasks
}

// Lookup returns the task with key k.
func (g *Graph[C]) Lookup(k Key) (Task, bool) {
	i, ok := g.byKey[k]
	if !ok {
		return nil, false
	}
	return g.nodes[i].task, true
}

func (g *Graph[C]) lifecycleOf(n *node[C]) Lifecycle {
	if len(g.overrides) == 0 {
		return n.lifecycle
	}
	if l, ok := g.overrides[n.task.Key().Type]; ok {
		return l
	}
	return n.lifecycle
}

// inPart is the runner of a task of type T whose world W is a part of the graph's world C.
type inPart[T Resource[T, W], C, W any] struct {
	typed typed[T, W]
	in    func(C) W
}

func (r *inPart[T, C, W]) sync(ctx context.Context, world C, target Target, lc Lifecycle) (*Change, error) {
	return r.typed.sync(ctx, r.in(world), target, lc)
}

func (r *inPart[T, C, W]) canRender() bool { return r.typed.canRender() }

// typed is the runner of a task of type T.
type typed[T Resource[T, C], C any] struct {
	task T
	ti   *typeInfo // the field rules of T's struct
}

func (r *typed[T, C]) canRender() bool {
	_, ok := any(r.task).(Renderer[T, C])
	return ok
}

func isNil[T any](v T) bool {
	rv := reflect.ValueOf(v)
	return !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil())
}

// sync is one attempt at the task: Find, compare, CheckChanges, and Render unless the target is a dry run.
func (r *typed[T, C]) sync(ctx context.Context, world C, target Target, lc Lifecycle) (*Change, error) {
	expected := r.task
	if res, ok := any(expected).(Resolver); ok {
		if err := res.Resolve(); err != nil {
			return nil, fmt.Errorf("resolving: %w", err)
		}
	}
	actual, err := expected.Find(ctx, world)
	if err != nil {
		return nil, fmt.Errorf("finding: %w", err)
	}
	exists := !isNil(actual)
	if exists {
		copyOutputs(r.ti, actual, expected)
	} else if lc == ExistsAndValidates || lc == ExistsAndWarnIfChanges {
		return nil, Terminal(fmt.Errorf("lifecycle %s: %w", lc, ErrNotFound))
	}
	fields, changes := diffOf(r.ti, actual, expected)
	if exists && len(fields) == 0 {
		return nil, nil
	}
	switch lc { // lifecycles that never render decide before CheckChanges: nothing will be changed
	case ExistsAndValidates:
		return nil, Terminal(fmt.Errorf("lifecycle %s: differs from the world in %s%s", lc, fieldNames(fields), fieldValues(fields)))
	case ExistsAndWarnIfChanges:
		Logger(ctx).Warn("differs from the world; not changing it (lifecycle ExistsAndWarnIfChanges)",
			"fields", fieldNames(fields))
		return nil, nil
	}
	if err := expected.CheckChanges(actual, expected, changes); err != nil {
		return nil, Terminal(fmt.Errorf("checking changes: %w", err))
	}
	change := &Change{Key: expected.Key(), Action: Modify, Fields: fields}
	if r, ok := any(expected).(Replacer[T]); ok && exists {
		change.Action, change.Note = Replace, r.Replaces(actual)
	} else if n, ok := any(expected).(Noter[T]); ok && exists {
		change.Note = n.ChangeNote(actual)
	}
	if !exists {
		change.Action = Create
	}
	if target == DryRun {
		return change, nil
	}
	if err := any(expected).(Renderer[T, C]).Render(ctx, world, actual, expected, changes); err != nil {
		return nil, &renderError{err: err}
	}
	return change, nil
}

// renderError is an error Render returned: the task may have changed the world before it returned.
type renderError struct{ err error }

func (e *renderError) Error() string { return "rendering: " + e.err.Error() }
func (e *renderError) Unwrap() error { return e.err }

// fieldValues shows, for an error, what the world has and what the task wants of each field whose values are
// short (secrets redacted, as in every report): " (Zone: us-east-1c in the world, us-east-1x wanted)"; "" when
// none is.
func fieldValues(fields []FieldChange) string {
	var parts []string
	for _, f := range fields {
		had, want := formatValue(f.Old), formatValue(f.New)
		if len(had)+len(want) > 120 || strings.ContainsAny(had+want, "\n") {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s in the world, %s wanted", f.Name, had, want))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func fieldNames(fields []FieldChange) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
