package engine

import (
	"context"
	"fmt"
)

// Key identifies a task in a graph: its type and its name. Keys are unique within a graph.
type Key struct {
	Type string
	Name string
}

// String renders the key as "Type/name", the form used in every report and error.
func (k Key) String() string { return k.Type + "/" + k.Name }

// Task is what the graph holds: something with a key and explicit, typed dependencies.
//
// Deps returns the tasks this one needs done before it runs, usually the task-typed fields of the struct. The
// engine resolves them by key, so a dependency must be added to the graph too (enginetest.CheckDeps verifies
// that every task-typed field is listed).
type Task interface {
	Key() Key
	Deps() []Task
}

// Resource is a task the engine can converge on world C (a cloud client, a node's filesystem and systemd, ...).
// T is the task's own pointer type, so that Find and CheckChanges are typed:
//
//	func (f *File) Find(ctx context.Context, n *Node) (*File, error)
//	func (f *File) CheckChanges(actual, expected, changes *File) error
//
// Find reads the world and returns the actual object, or nil when it is absent. Find may normalise what it reads
// (sort a set, turn an empty map into nil) so that an unchanged object compares equal to the expected one.
//
// CheckChanges rejects changes that cannot be made (an immutable field, a required field left empty) with a
// clear error. actual is nil when the object will be created. An error from CheckChanges is terminal.
type Resource[T any, C any] interface {
	Task
	Find(ctx context.Context, world C) (T, error)
	CheckChanges(actual, expected, changes T) error
}

// Renderer is the interface the Apply target needs: Render makes the world match expected. It receives the
// actual object (nil on create), the expected one and the changes, a T in which only the fields that differ are
// set. Render writes outputs (IDs the world assigned) back into expected, so that dependents can read them.
//
// A task that does not implement Renderer can still take part in a dry run, or run with a lifecycle that never
// renders (ExistsAndValidates, ExistsAndWarnIfChanges, Ignore); in Sync it is rejected when the graph is validated.
type Renderer[T any, C any] interface {
	Render(ctx context.Context, world C, actual, expected, changes T) error
}

// Resolver is a task whose desired state is made from its dependencies' outputs: a node configuration that
// carries the certificates issued by the tasks it depends on. The engine calls Resolve on the expected task once
// its dependencies are done and before each Find, so that every attempt compares what the dependencies hold
// now. In a dry run a dependency that would be created or changed has no outputs yet: Resolve must then state
// something that differs from any object the world can hold (a placeholder), so that the plan shows the change
// the apply will make. An error from Resolve fails the task like an error from Find.
type Resolver interface {
	Resolve() error
}

// Lifecycle says what the engine does with a task.
type Lifecycle int

const (
	// Sync finds the object and renders whatever differs. The default.
	Sync Lifecycle = iota
	// Ignore neither finds nor renders the task; dependents run as if it were done.
	Ignore
	// WarnIfInsufficientAccess syncs, but an access-denied error (see ErrAccessDenied) is logged as a warning
	// and the task counts as done.
	WarnIfInsufficientAccess
	// ExistsAndValidates requires the object to exist and to match; it never renders. A missing object or a
	// difference is an error.
	ExistsAndValidates
	// ExistsAndWarnIfChanges requires the object to exist; a difference is logged as a warning, never rendered.
	ExistsAndWarnIfChanges
)

var lifecycleNames = [...]string{
	Sync:                     "Sync",
	Ignore:                   "Ignore",
	WarnIfInsufficientAccess: "WarnIfInsufficientAccess",
	ExistsAndValidates:       "ExistsAndValidates",
	ExistsAndWarnIfChanges:   "ExistsAndWarnIfChanges",
}

func (l Lifecycle) String() string {
	if l >= 0 && int(l) < len(lifecycleNames) {
		return lifecycleNames[l]
	}
	return fmt.Sprintf("Lifecycle(%d)", int(l))
}

// ParseLifecycle turns a lifecycle's name (as printed by String) back into a Lifecycle.
func ParseLifecycle(s string) (Lifecycle, error) {
	for l, name := range lifecycleNames {
		if name == s {
			return Lifecycle(l), nil
		}
	}
	return 0, fmt.Errorf("unknown lifecycle %q: want one of %v", s, lifecycleNames)
}

// renders reports whether a task with this lifecycle may ever change the world.
func (l Lifecycle) renders() bool { return l == Sync || l == WarnIfInsufficientAccess }
