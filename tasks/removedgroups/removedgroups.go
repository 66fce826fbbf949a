// Package removedgroups holds what the clouds' cleanups of the instance groups removed from a cluster's spec
// share (awstasks.UnusedGroups, gcetasks.UnusedGroups): the plan's deletion of one object such a group left, and
// the choice of what an apply may delete: only what its dry run listed.
package removedgroups

import (
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// Object is one cloud object that an instance group removed from the spec left.
type Object struct {
	Key engine.Key
	// Group is the instance group that the object's tag or label names.
	Group string
	// Machines: deleting the object deletes the group's machines (an Auto Scaling group, a managed instance group).
	Machines bool
	// Note, when set, says why the object goes instead of naming Group: an object that no single group left.
	Note string
}

// Change is the plan's deletion of o, its note naming the group that is gone.
func (o Object) Change() engine.Change {
	note := "instance group " + o.Group + " is no longer in the spec"
	if o.Note != "" {
		note = o.Note
	}
	if o.Machines {
		note += "; its machines go with it"
	}
	return engine.Change{Key: o.Key, Action: engine.Delete, Note: note}
}

// Deletable is a cloud's record of an Object (embedding it).
type Deletable interface{ Change() engine.Change }

// Sorted is groups (the objects that hold machines), then the rest (what they were made from), each sorted by
// name: the order in which a cleanup deletes them.
func Sorted[T Deletable](groups, rest []T) []T {
	byName := func(a, b T) int { return strings.Compare(a.Change().Key.Name, b.Change().Key.Name) }
	slices.SortFunc(groups, byName)
	slices.SortFunc(rest, byName)
	return append(groups, rest...)
}

// Deletions are the plan's deletions of found, in its order.
func Deletions[T Deletable](found []T) []engine.Change {
	var out []engine.Change
	for _, o := range found {
		out = append(out, o.Change())
	}
	return out
}

// Planned are those of found whose deletion planned (a dry run's plan) lists, in found's order: what an apply
// may delete. What else it finds waits for the next run, whose dry run lists it.
func Planned[T Deletable](found []T, planned []engine.Change) []T {
	announced := engine.Deletions(planned)
	var out []T
	for _, o := range found {
		if announced[o.Change().Key] {
			out = append(out, o)
		}
	}
	return out
}
