package gcetasks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"kubeup.dev/kubeup/engine"
)

// FirewallRules is the set of firewall rules the cluster keeps: the FirewallRule tasks of its graph, listed in
// Keep. A rule that carries the cluster's description ("kubeup: owned by cluster <name>", which FirewallRule
// gives every rule it makes) and that is not one of Keep is deleted: a rule the spec no longer asks for
// (spec.gce.sshAccess emptied) or one the model renamed. A rule without exactly that description (made by hand,
// by another tool or by another cluster) is never touched. The task depends on its rules, so a renamed rule is
// made before the old one is deleted. Its key is "FirewallRules/<Cluster>".
type FirewallRules struct {
	// Cluster is the cluster's name; it must be the Cloud's.
	Cluster string
	// Keep are all the FirewallRule tasks of the cluster's graph.
	Keep []*FirewallRule `kubeup:"-"`
	// Names are the names of the rules the cluster keeps; Resolve makes them from Keep. Found: the same, and the
	// names of the cluster's rules that none of Keep names, which Render deletes (a plan shows them as removed).
	Names []string `kubeup:"set,nilempty"`

	stale []string // found: the rules to delete, sorted
}

var (
	_ engine.Resource[*FirewallRules, *Cloud] = (*FirewallRules)(nil)
	_ engine.Renderer[*FirewallRules, *Cloud] = (*FirewallRules)(nil)
	_ engine.Resolver                         = (*FirewallRules)(nil)
	_ engine.Classed                          = (*FirewallRules)(nil)
)

func (r *FirewallRules) Key() engine.Key { return engine.Key{Type: "FirewallRules", Name: r.Cluster} }

func (r *FirewallRules) Deps() []engine.Task {
	deps := make([]engine.Task, 0, len(r.Keep))
	for _, f := range r.Keep {
		deps = append(deps, f)
	}
	return deps
}

func (r *FirewallRules) APIClass() string { return "compute" }

// Resolve states the kept rules by name.
func (r *FirewallRules) Resolve() error {
	r.Names = make([]string, 0, len(r.Keep))
	for _, f := range r.Keep {
		r.Names = append(r.Names, f.Name)
	}
	return nil
}

// Find reads the cluster's rules from the project's rules (the one firewalls.list of the run that FirewallRule's
// Finds share). What it finds is Names (each rule task reports its own rule; this task does not report them
// twice) and the names of the rules with the cluster's description that none of Keep names.
func (r *FirewallRules) Find(ctx context.Context, c *Cloud) (*FirewallRules, error) {
	if r.Cluster != c.Cluster {
		return nil, engine.Terminal(fmt.Errorf("the firewall rules of cluster %s cannot be kept in the cloud of cluster %s", r.Cluster, c.Cluster))
	}
	all, err := c.firewalls(ctx)
	if err != nil {
		return nil, err
	}
	a := &FirewallRules{Cluster: r.Cluster, Names: slices.Clone(r.Names)}
	for name, f := range all {
		if f.Description != c.ownedDescription() || slices.Contains(r.Names, name) {
			continue
		}
		a.stale = append(a.stale, name)
	}
	slices.Sort(a.stale)
	a.Names = append(a.Names, a.stale...)
	return a, nil
}

// CheckChanges requires the cluster's name and rules with names.
func (r *FirewallRules) CheckChanges(actual, expected, changes *FirewallRules) error {
	if expected.Cluster == "" {
		return errors.New("field Cluster of the cluster's firewall rules is required")
	}
	for _, f := range expected.Keep {
		if f == nil || f.Name == "" {
			return fmt.Errorf("field Keep of the firewall rules of cluster %s: a rule without a name", expected.Cluster)
		}
	}
	return nil
}

// Render deletes the cluster's rules that none of Keep names, waiting on each deletion. The kept rules are made
// by their tasks, which ran before.
func (r *FirewallRules) Render(ctx context.Context, c *Cloud, actual, expected, changes *FirewallRules) error {
	if actual == nil || len(actual.stale) == 0 {
		return nil
	}
	defer c.reads.firewalls.Forget()
	for _, name := range actual.stale {
		doing := "deleting firewall rule " + name + " (the spec no longer asks for it)"
		op, err := c.Compute.Firewalls.Delete(c.Project, name).Context(ctx).Do()
		if IsNotFound(err) {
			continue // another run deleted it already
		}
		if err := c.mutate(ctx, doing, op, err); err != nil && !IsNotFound(err) {
			return err
		}
		engine.Logger(ctx).Info("deleted firewall rule that the spec no longer asks for", "name", name)
	}
	return nil
}
