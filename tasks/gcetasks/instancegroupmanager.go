package gcetasks

import (
	"context"
	"errors"
	"fmt"
	"kubeup.dev/kubeup/internal/gcelabels"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
)

// InstanceGroupManager is a zonal managed instance group the cluster owns: TargetSize instances of Template,
// named <BaseInstanceName>-xxxx. A change of the template points the group at the new one (instances made from
// now on boot it; the running ones are left as they are until a rolling update replaces them). Its key is
// "InstanceGroupManager/<Zone>/<Name>".
type InstanceGroupManager struct {
	// Name is the group's name, a GCE resource name: "nodes-us-central1-a-gce-example-com".
	Name string
	// Zone is the group's zone. Required; cannot change.
	Zone *string
	// TargetSize is how many instances the group keeps. Required to create.
	TargetSize *int64
	// Template is what the instances boot. Required.
	Template *InstanceTemplate
	// BaseInstanceName prefixes the instances' names ("" = Name). Cannot change.
	BaseInstanceName string
}

var (
	_ engine.Resource[*InstanceGroupManager, *Cloud] = (*InstanceGroupManager)(nil)
	_ engine.Renderer[*InstanceGroupManager, *Cloud] = (*InstanceGroupManager)(nil)
	_ engine.Classed                                 = (*InstanceGroupManager)(nil)
)

func (g *InstanceGroupManager) Key() engine.Key {
	zone := ""
	if g.Zone != nil {
		zone = *g.Zone
	}
	return engine.Key{Type: "InstanceGroupManager", Name: zone + "/" + g.Name}
}

func (g *InstanceGroupManager) Deps() []engine.Task {
	if g.Template == nil {
		return nil
	}
	return []engine.Task{g.Template}
}

func (g *InstanceGroupManager) APIClass() string { return "compute" }

func (g *InstanceGroupManager) baseInstanceName() string {
	if g.BaseInstanceName == "" {
		return g.Name
	}
	return g.BaseInstanceName
}

// Find reads the group from the groups of its zone (one instanceGroupManagers.list per zone and run). Its
// template is reported as the task's when the group uses the template the task's template states, and as a
// template named by the group's template otherwise, so that the plan shows the change. A group of the name that
// is not the cluster's is an error.
func (g *InstanceGroupManager) Find(ctx context.Context, c *Cloud) (*InstanceGroupManager, error) {
	if g.Zone == nil || *g.Zone == "" {
		return nil, nil
	}
	all, err := c.groupManagers(ctx, *g.Zone)
	if err != nil {
		return nil, err
	}
	m := all[g.Name]
	if m == nil {
		return nil, nil
	}
	if m.Description != c.ownedDescription() {
		return nil, engine.Terminal(fmt.Errorf("a managed instance group named %s exists in zone %s and is not cluster %s's (its "+
			"description is %q): rename the instance group or remove that group", g.Name, *g.Zone, c.Cluster, m.Description))
	}
	zone := lastSegment(m.Zone)
	size := m.TargetSize
	a := &InstanceGroupManager{Name: m.Name, Zone: &zone, TargetSize: &size, BaseInstanceName: m.BaseInstanceName}
	if a.BaseInstanceName == g.baseInstanceName() {
		a.BaseInstanceName = g.BaseInstanceName
	}
	if m.InstanceTemplate != "" {
		name := lastSegment(m.InstanceTemplate)
		if g.Template != nil && g.Template.SelfLink != nil && lastSegment(*g.Template.SelfLink) == name {
			a.Template = g.Template
		} else {
			a.Template = &InstanceTemplate{Name: name}
		}
	}
	return a, nil
}

// CheckChanges requires a zone, a template and, to create, a target size; the zone and the base instance name
// cannot change.
func (g *InstanceGroupManager) CheckChanges(actual, expected, changes *InstanceGroupManager) error {
	switch {
	case !gcelabels.ValidName(expected.Name):
		return fmt.Errorf("field Name of managed instance group %q is not a GCE resource name", expected.Name)
	case expected.Zone == nil || *expected.Zone == "":
		return fmt.Errorf("field Zone is required for managed instance group %s", expected.Name)
	case expected.Template == nil:
		return fmt.Errorf("field Template is required for managed instance group %s", expected.Name)
	case expected.TargetSize != nil && *expected.TargetSize < 0:
		return fmt.Errorf("field TargetSize of managed instance group %s: %d is negative", expected.Name, *expected.TargetSize)
	}
	if actual == nil {
		if expected.TargetSize == nil {
			return fmt.Errorf("field TargetSize is required to create managed instance group %s", expected.Name)
		}
		return nil
	}
	if changes.BaseInstanceName != "" {
		return fmt.Errorf("field BaseInstanceName of managed instance group %s cannot change from %s to %s: delete the group and run "+
			"again", expected.Name, actual.BaseInstanceName, expected.BaseInstanceName)
	}
	return nil
}

// Render creates the group (with a requestId derived from the cluster, zone and name: a create repeated after a
// crash makes no second group), or points it at the task's template (setInstanceTemplate) and resizes it.
func (g *InstanceGroupManager) Render(ctx context.Context, c *Cloud, actual, expected, changes *InstanceGroupManager) error {
	zone := *expected.Zone
	defer c.reads.groups.Of(zone).Forget()
	what := fmt.Sprintf("managed instance group %s in zone %s", expected.Name, zone)
	if expected.Template.SelfLink == nil {
		return engine.NotReady(errors.New("the template of " + what + " is not known yet"))
	}
	tmpl := *expected.Template.SelfLink
	if actual == nil {
		m := &compute.InstanceGroupManager{
			Name: expected.Name, Description: c.ownedDescription(), BaseInstanceName: expected.baseInstanceName(),
			InstanceTemplate: tmpl, TargetSize: *expected.TargetSize, ForceSendFields: []string{"TargetSize"},
		}
		op, err := c.Compute.InstanceGroupManagers.Insert(c.Project, zone, m).
			RequestId(requestID(0, "InstanceGroupManager", c.Cluster, zone, expected.Name)).Context(ctx).Do()
		err = c.mutate(ctx, "creating "+what, op, err)
		if isConflict(err) {
			return engine.NotReady(fmt.Errorf("creating %s: it exists already: reading it again: %w", what, err))
		}
		if err != nil {
			return err
		}
		engine.Logger(ctx).Info("created managed instance group", "name", expected.Name, "zone", zone)
		return nil
	}
	if changes.Template != nil {
		op, err := c.Compute.InstanceGroupManagers.SetInstanceTemplate(c.Project, zone, expected.Name,
			&compute.InstanceGroupManagersSetInstanceTemplateRequest{InstanceTemplate: tmpl}).Context(ctx).Do()
		err = c.mutate(ctx, "setting the template of "+what, op, err)
		if err != nil {
			return err
		}
		engine.Logger(ctx).Info("pointed managed instance group at a new template", "name", expected.Name, "template", lastSegment(tmpl))
	}
	if changes.TargetSize != nil {
		op, err := c.Compute.InstanceGroupManagers.Resize(c.Project, zone, expected.Name, *expected.TargetSize).Context(ctx).Do()
		err = c.mutate(ctx, "resizing "+what, op, err)
		if err != nil {
			return err
		}
		engine.Logger(ctx).Info("resized managed instance group", "name", expected.Name, "size", *expected.TargetSize)
	}
	return nil
}
