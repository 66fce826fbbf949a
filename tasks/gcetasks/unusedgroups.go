package gcetasks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/removedgroups"
)

// UnusedGroups is what the instance groups removed from the cluster's spec leave: the cluster's managed instance
// groups (their instances with them) and instance templates whose group label (GroupLabel) names a group that is
// not one of Groups. A template is the cluster's by the ownership label (as DeleteOwned takes it), a managed
// instance group by the cluster's description and a template of the cluster that names a removed group; nothing
// else is ever touched: not another cluster's, not one made by hand, not one without the group label, never one
// named in Keep nor a template one of Keep uses.
//
// It is no task of the graph: a task's change is one change of its own key, and a reviewer must read each
// object a run deletes. The caller runs it after the graph (cloudup: the dry run adds Deletions to its plan, one
// "delete InstanceGroupManager/<zone>/<name>" or "delete InstanceTemplate/<name>" each; an apply then calls
// Delete), so that the kept groups are made before the removed ones go.
type UnusedGroups struct {
	// Cluster is the cluster's name; it must be the Cloud's.
	Cluster string
	// GroupLabel is the label that names a template's instance group ("kubeup-instance-group").
	GroupLabel string
	// Groups are the label values (LabelValue) of the spec's instance groups.
	Groups []string
	// Keep are the graph's managed instance groups, "<zone>/<name>": never deleted, nor the templates they use.
	Keep []string
}

// unused is one managed instance group or instance template UnusedGroups deletes.
type unused struct {
	removedgroups.Object        // InstanceGroupManager/<zone>/<name> or InstanceTemplate/<name>
	zone, name           string // a managed instance group's zone; the object's name
}

// find reads the cluster's templates (the run's shared instanceTemplates.list) and the managed instance groups of
// the region's zones (the run's shared lists, per zone; fresh: read again) and returns what Delete deletes: the
// managed instance groups, sorted by zone and name, then the templates, sorted by name.
func (u *UnusedGroups) find(ctx context.Context, c *Cloud, fresh bool) ([]unused, error) {
	if u.Cluster != c.Cluster {
		return nil, engine.Terminal(fmt.Errorf("the instance groups of cluster %s cannot be cleaned up in the cloud of cluster %s", u.Cluster, c.Cluster))
	}
	if u.GroupLabel == "" {
		return nil, engine.Terminal(errors.New("the label that names an instance group is required to find the unused ones"))
	}
	if fresh {
		c.reads.templates.Forget()
	}
	templates, err := c.instanceTemplates(ctx)
	if err != nil {
		return nil, err
	}
	removed := map[string]string{} // the cluster's templates of groups no longer in the spec: their group
	for name, t := range templates {
		g, ok := t.Properties.Labels[u.GroupLabel]
		if ok && g != "" && c.owns(t.Properties.Labels) && !slices.Contains(u.Groups, g) {
			removed[name] = g
		}
	}
	if len(removed) == 0 {
		return nil, nil
	}
	all, err := c.ownedGroups(ctx, fresh)
	if err != nil {
		return nil, err
	}
	var groups, staleTemplates []unused
	for _, g := range all {
		zone, tmpl := lastSegment(g.Zone), lastSegment(g.InstanceTemplate)
		if slices.Contains(u.Keep, zone+"/"+g.Name) {
			delete(removed, tmpl) // used by a group of the spec: never deleted
			continue
		}
		if group, ok := removed[tmpl]; ok {
			groups = append(groups, unused{Object: removedgroups.Object{Key: engine.Key{Type: "InstanceGroupManager",
				Name: zone + "/" + g.Name}, Group: group, Machines: true}, zone: zone, name: g.Name})
		}
	}
	for name, group := range removed {
		staleTemplates = append(staleTemplates, unused{Object: removedgroups.Object{Key: engine.Key{Type: "InstanceTemplate",
			Name: name}, Group: group}, name: name})
	}
	return removedgroups.Sorted(groups, staleTemplates), nil
}

// Deletions returns what Delete would delete now, as the plan's deletions (fresh: the run's reads are read
// again first).
func (u *UnusedGroups) Deletions(ctx context.Context, c *Cloud, fresh bool) ([]engine.Change, error) {
	found, err := u.find(ctx, c, fresh)
	return removedgroups.Deletions(found), err
}

// Delete deletes, of planned (Deletions' answer in the dry run), what is still there: the managed instance groups
// (their instances with them, waiting on each), then the templates. What it finds that planned does not hold is
// left for the next run, whose dry run lists it. It returns the deletions done, also when it fails.
func (u *UnusedGroups) Delete(ctx context.Context, c *Cloud, planned []engine.Change) ([]engine.Change, error) {
	found, err := u.find(ctx, c, true)
	if err != nil {
		return nil, err
	}
	defer c.reads.templates.Forget()
	var done []engine.Change
	for _, o := range removedgroups.Planned(found, planned) {
		var doing string
		var err error
		switch o.Key.Type {
		case "InstanceGroupManager":
			c.reads.groups.Of(o.zone).Forget()
			doing = "deleting managed instance group " + o.name + " in zone " + o.zone + " (instance group " + o.Group + " is no longer in the spec)"
			op, derr := c.Compute.InstanceGroupManagers.Delete(c.Project, o.zone, o.name).Context(ctx).Do()
			err = c.mutate(ctx, doing, op, derr)
		case "InstanceTemplate":
			doing = "deleting instance template " + o.name + " (instance group " + o.Group + " is no longer in the spec)"
			op, derr := c.Compute.InstanceTemplates.Delete(c.Project, o.name).Context(ctx).Do()
			err = c.mutate(ctx, doing, op, derr)
		}
		if IsNotFound(err) {
			continue
		}
		if err != nil {
			return done, err
		}
		done = append(done, o.Change())
	}
	return done, nil
}
