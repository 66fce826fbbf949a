package fakegce

import (
	"slices"

	compute "google.golang.org/api/compute/v1"
)

// recreateInstances answers instanceGroupManagers.recreateInstances: each instance named (by URL, as
// listManagedInstances gives it, or by a zonal path) is deleted, and the group makes a new one under the same
// name, with a new id, from the group's current instance template. Its disks lose the old instance as a user, as
// when an instance is deleted. An instance that is not the group's is refused before anything changes. The
// recreation is done when the call is answered; the operation (the group's, zonal) follows SlowOperations.
func recreateInstances(c *call) (any, error) {
	g, err := c.group(c.names[0])
	if err != nil {
		return nil, err
	}
	var req compute.InstanceGroupManagersRecreateInstancesRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if len(req.Instances) == 0 {
		return nil, invalid("Required field 'instances' not specified")
	}
	t, ok := c.p.templates[lastElem(g.InstanceTemplate)]
	if !ok {
		return nil, invalid("Invalid value for field 'resource.instanceTemplate': '%s'. The referenced instance template does not exist.", g.InstanceTemplate)
	}
	var old []*compute.Instance
	for _, s := range req.Instances {
		r, err := c.parseRef(s, "instances", "zones", c.where)
		if err != nil {
			return nil, err
		}
		in, ok := c.p.instances[key(r.where, r.name)]
		if !ok || r.project != c.p.name || r.where != c.where || c.p.groupOf[in.SelfLink] != g.SelfLink {
			return nil, invalid("Invalid value for field 'instances': '%s'. The instance is not a member of the managed instance group '%s'.",
				s, c.thing("instanceGroupManagers", g.Name))
		}
		if !slices.Contains(old, in) {
			old = append(old, in)
		}
	}
	for _, in := range old {
		c.p.copyDisksOf(in)
		c.p.removeInstance(c.s, in)
		c.renameInstance(c.makeInstance(g, t), in.Name)
	}
	return c.newOp("compute.instanceGroupManagers.recreateInstances", g.SelfLink, g.Id)
}

// renameInstance gives an instance just made by makeInstance another (free) name of its zone: its selfLink, its
// boot disk's and its place in the maps follow.
func (c *call) renameInstance(in *compute.Instance, name string) {
	oldLink := in.SelfLink
	delete(c.p.instances, key(c.where, in.Name))
	group := c.p.groupOf[oldLink]
	delete(c.p.groupOf, oldLink)
	in.Name, in.SelfLink = name, c.p.link("zones", c.where, "instances", name)
	for _, ad := range in.Disks {
		if ad.Boot {
			ad.Source = c.p.link("zones", c.where, "disks", name)
		}
	}
	c.p.instances[key(c.where, name)] = in
	c.p.groupOf[in.SelfLink] = group
	for k, l := range c.s.instanceOrder {
		if l == oldLink {
			c.s.instanceOrder[k] = in.SelfLink
		}
	}
}

// copyDisksOf replaces the disks in's attachments name by copies (with their own Users), before removeInstance
// changes them: an answer being written without the lock (a disks.list of the same moment) holds the old ones.
func (p *project) copyDisksOf(in *compute.Instance) {
	for _, ad := range in.Disks {
		for k, d := range p.disks {
			if d.SelfLink == ad.Source {
				cp := *d
				cp.Users = slices.Clone(d.Users)
				p.disks[k] = &cp
			}
		}
	}
}
