package gcetasks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/api/compute/v1"
)

// ManagedGroup is one managed instance group of the cluster as a rolling update sees it: its target size, the
// instance template it makes instances from now, and its instances.
type ManagedGroup struct {
	Name, Zone string
	TargetSize int64
	// Template is the name of the instance template the group makes instances from.
	Template string
	// Instances are the group's instances, sorted by name.
	Instances []ManagedInstance
}

// ManagedInstance is one instance of a managed instance group.
type ManagedInstance struct {
	// Name is the instance's name (a recreated instance keeps it); ID its numeric id (a new one when recreated).
	Name, ID string
	// URL is the instance's URL, as recreateInstances takes it.
	URL string
	// Status is the instance's (RUNNING, STAGING, ...) and Action what the group is doing with it (NONE,
	// RECREATING, ...).
	Status, Action string
	// Template is the name of the instance template the instance was made from.
	Template string
	// Addresses are the instance's internal and external addresses.
	Addresses []string
}

// Ready reports whether the instance runs and the group does nothing with it.
func (i ManagedInstance) Ready() bool { return i.Status == "RUNNING" && i.Action == "NONE" }

// ManagedGroup reads the managed instance group name of zone and its instances (instanceGroupManagers.get and
// listManagedInstances); nil when there is none. A group that is not the cluster's is refused.
func (c *Cloud) ManagedGroup(ctx context.Context, zone, name string) (*ManagedGroup, error) {
	m, err := c.Compute.InstanceGroupManagers.Get(c.Project, zone, name).Context(ctx).Do()
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, Classify("reading managed instance group "+name+" of zone "+zone, err)
	}
	if m.Description != c.ownedDescription() {
		return nil, fmt.Errorf("the managed instance group %s of zone %s is not cluster %s's (its description is %q): kubeup replaces only the instances of its own groups",
			name, zone, c.Cluster, m.Description)
	}
	g := &ManagedGroup{Name: name, Zone: zone, TargetSize: m.TargetSize, Template: lastSegment(m.InstanceTemplate)}
	err = c.Compute.InstanceGroupManagers.ListManagedInstances(c.Project, zone, name).Pages(ctx,
		func(page *compute.InstanceGroupManagersListManagedInstancesResponse) error {
			for _, mi := range page.ManagedInstances {
				i := ManagedInstance{Name: lastSegment(mi.Instance), ID: strconv.FormatUint(mi.Id, 10), URL: mi.Instance,
					Status: mi.InstanceStatus, Action: mi.CurrentAction}
				if mi.Version != nil {
					i.Template = lastSegment(mi.Version.InstanceTemplate)
				}
				g.Instances = append(g.Instances, i)
			}
			return nil
		})
	if err != nil {
		return nil, Classify("listing the instances of managed instance group "+name+" of zone "+zone, err)
	}
	slices.SortFunc(g.Instances, func(a, b ManagedInstance) int { return strings.Compare(a.Name, b.Name) })
	for k, i := range g.Instances {
		in, err := c.Compute.Instances.Get(c.Project, zone, i.Name).Context(ctx).Do()
		if IsNotFound(err) {
			continue // being recreated
		}
		if err != nil {
			return nil, Classify("reading instance "+i.Name+" of zone "+zone, err)
		}
		for _, ni := range in.NetworkInterfaces {
			if ni.NetworkIP != "" {
				g.Instances[k].Addresses = append(g.Instances[k].Addresses, ni.NetworkIP)
			}
			for _, ac := range ni.AccessConfigs {
				if ac.NatIP != "" {
					g.Instances[k].Addresses = append(g.Instances[k].Addresses, ac.NatIP)
				}
			}
		}
	}
	return g, nil
}

// RecreateInstance has the managed instance group name of zone recreate one of its instances (by URL) from the
// group's current instance template, and waits for the operation (the group's own, not the new instance's boot).
func (c *Cloud) RecreateInstance(ctx context.Context, zone, name, instanceURL string) error {
	op, err := c.Compute.InstanceGroupManagers.RecreateInstances(c.Project, zone, name,
		&compute.InstanceGroupManagersRecreateInstancesRequest{Instances: []string{instanceURL}}).Context(ctx).Do()
	return c.mutate(ctx, "recreating instance "+lastSegment(instanceURL)+" of managed instance group "+name, op, err)
}
