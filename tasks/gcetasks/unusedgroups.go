package gcetasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// UnusedGroups deletes what the instance groups removed from the cluster's spec leave: the cluster's managed
// instance groups (their instances with them) and instance templates whose group label (GroupLabel) names a group
// that is not one of Groups. A template is the cluster's by the ownership label (as DeleteOwned takes it), a
// managed instance group by the cluster's description and a template of the cluster that names a removed group;
// nothing else is ever touched: not another cluster's, not one made by hand, not one without the group label,
// never one of Keep nor a template one of Keep uses. Its key is "UnusedGroups/<Cluster>".
type UnusedGroups struct {
	// Cluster is the cluster's name; it must be the Cloud's.
	Cluster string
	// GroupLabel is the label that names a template's instance group ("kubeup-instance-group").
	GroupLabel string
	// Groups are the label values (LabelValue) of the spec's instance groups. Found: the same, and the keys
	// ("InstanceGroupManager/<zone>/<name>", "InstanceTemplate/<name>") of what Render deletes (a plan shows them
	// as removed).
	Groups []string `kubeup:"set,nilempty"`
	// Keep are the graph's managed instance groups: run first, never deleted.
	Keep []*InstanceGroupManager `kubeup:"-"`

	groups    []staleGroup // found: the managed instance groups to delete
	templates []string     // found: the templates to delete, sorted
}

type staleGroup struct{ zone, name string }

var (
	_ engine.Resource[*UnusedGroups, *Cloud] = (*UnusedGroups)(nil)
	_ engine.Renderer[*UnusedGroups, *Cloud] = (*UnusedGroups)(nil)
	_ engine.Classed                         = (*UnusedGroups)(nil)
)

func (u *UnusedGroups) Key() engine.Key { return engine.Key{Type: "UnusedGroups", Name: u.Cluster} }

func (u *UnusedGroups) Deps() []engine.Task {
	deps := make([]engine.Task, 0, len(u.Keep))
	for _, g := range u.Keep {
		deps = append(deps, g)
	}
	return deps
}

func (u *UnusedGroups) APIClass() string { return "compute" }

// Find reads the cluster's templates (the run's shared instanceTemplates.list) and the managed instance groups of
// the region's zones (the run's shared lists, per zone).
func (u *UnusedGroups) Find(ctx context.Context, c *Cloud) (*UnusedGroups, error) {
	if u.Cluster != c.Cluster {
		return nil, engine.Terminal(fmt.Errorf("the instance groups of cluster %s cannot be cleaned up in the cloud of cluster %s", u.Cluster, c.Cluster))
	}
	a := &UnusedGroups{Cluster: u.Cluster, GroupLabel: u.GroupLabel, Groups: slices.Clone(u.Groups)}
	if u.GroupLabel == "" {
		return a, nil
	}
	templates, err := c.instanceTemplates(ctx)
	if err != nil {
		return nil, err
	}
	removed := map[string]bool{} // the cluster's templates of groups no longer in the spec
	for name, t := range templates {
		g, ok := t.Properties.Labels[u.GroupLabel]
		if ok && g != "" && c.owns(t.Properties.Labels) && !slices.Contains(u.Groups, g) {
			removed[name] = true
		}
	}
	if len(removed) == 0 {
		return a, nil
	}
	kept := map[string]bool{}
	for _, k := range u.Keep {
		if k.Zone != nil {
			kept[*k.Zone+"/"+k.Name] = true
		}
	}
	all, err := c.ownedGroups(ctx, false)
	if err != nil {
		return nil, err
	}
	for _, g := range all {
		zone, tmpl := lastSegment(g.Zone), lastSegment(g.InstanceTemplate)
		if kept[zone+"/"+g.Name] {
			delete(removed, tmpl) // used by a group of the spec: never deleted
			continue
		}
		if removed[tmpl] {
			a.groups = append(a.groups, staleGroup{zone: zone, name: g.Name})
		}
	}
	for name := range removed {
		a.templates = append(a.templates, name)
	}
	slices.Sort(a.templates)
	slices.SortFunc(a.groups, func(x, y staleGroup) int {
		if x.zone != y.zone {
			return strings.Compare(x.zone, y.zone)
		}
		return strings.Compare(x.name, y.name)
	})
	for _, g := range a.groups {
		a.Groups = append(a.Groups, "InstanceGroupManager/"+g.zone+"/"+g.name)
	}
	for _, t := range a.templates {
		a.Groups = append(a.Groups, "InstanceTemplate/"+t)
	}
	return a, nil
}

// CheckChanges requires the cluster's name and the group label.
func (u *UnusedGroups) CheckChanges(actual, expected, changes *UnusedGroups) error {
	if expected.Cluster == "" {
		return errors.New("field Cluster of the cluster's unused instance groups is required")
	}
	if expected.GroupLabel == "" {
		return fmt.Errorf("field GroupLabel of the unused instance groups of cluster %s is required", expected.Cluster)
	}
	return nil
}

// Render deletes the managed instance groups found (their instances with them), waiting on each, then the
// templates.
func (u *UnusedGroups) Render(ctx context.Context, c *Cloud, actual, expected, changes *UnusedGroups) error {
	if actual == nil || len(actual.groups)+len(actual.templates) == 0 {
		return nil
	}
	defer c.reads.templates.Forget()
	for _, g := range actual.groups {
		c.reads.groups.Of(g.zone).Forget()
		doing := "deleting managed instance group " + g.name + " in zone " + g.zone + " (its instance group is no longer in the spec)"
		op, err := c.Compute.InstanceGroupManagers.Delete(c.Project, g.zone, g.name).Context(ctx).Do()
		if IsNotFound(err) {
			continue
		}
		if err := c.mutate(ctx, doing, op, err); err != nil && !IsNotFound(err) {
			return err
		}
		engine.Logger(ctx).Info("deleted managed instance group of an instance group no longer in the spec", "zone", g.zone, "name", g.name)
	}
	for _, name := range actual.templates {
		doing := "deleting instance template " + name + " (its instance group is no longer in the spec)"
		op, err := c.Compute.InstanceTemplates.Delete(c.Project, name).Context(ctx).Do()
		if IsNotFound(err) {
			continue
		}
		if err := c.mutate(ctx, doing, op, err); err != nil && !IsNotFound(err) {
			return err
		}
		engine.Logger(ctx).Info("deleted instance template of an instance group no longer in the spec", "name", name)
	}
	return nil
}
