package gcetasks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// DeleteOwned deletes what the cluster owns, in order: its managed instance groups (their instances with them),
// its instance templates, its firewall rules and its routes (kubenet's; by their description), its disks (by the
// ownership label), then the Cloud DNS records of names (every supported type of each, in one change); nothing
// else. It returns the keys ("InstanceGroupManager/<zone>/<name>", "InstanceTemplate/<name>",
// "FirewallRule/<name>", "Route/<name>", "Disk/<name>",
// "DNSRecord/<name>/A") of what it deleted (apply) or would delete, sorted by kind in that order. On an error it
// returns what it deleted before it. The groups of every zone of c.Region are looked at (of every zone when
// Region is "").
func (c *Cloud) DeleteOwned(ctx context.Context, names []string, apply bool) ([]string, error) {
	var done []string
	groups, err := c.ownedGroups(ctx, true)
	if err != nil {
		return done, err
	}
	type item struct{ key, zone, name string }
	del := func(kind string, items []item, call func(it item) (*compute.Operation, error)) error {
		slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.key, b.key) })
		if !apply {
			for _, it := range items {
				done = append(done, it.key)
			}
			return nil
		}
		start := len(done)
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make([]error, len(items))
		for i, it := range items {
			wg.Add(1)
			go func() {
				defer wg.Done()
				doing := "deleting " + kind + " " + it.name
				op, err := call(it)
				if IsNotFound(err) {
					err = nil // gone already
				} else if err = c.mutate(ctx, doing, op, err); IsNotFound(err) {
					err = nil
				}
				errs[i] = err
				if err == nil {
					mu.Lock()
					done = append(done, it.key)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		slices.Sort(done[start:])
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}

	var items []item
	for _, g := range groups {
		zone := lastSegment(g.Zone)
		items = append(items, item{key: "InstanceGroupManager/" + zone + "/" + g.Name, zone: zone, name: g.Name})
	}
	if err := del("managed instance group", items, func(it item) (*compute.Operation, error) {
		return c.Compute.InstanceGroupManagers.Delete(c.Project, it.zone, it.name).Context(ctx).Do()
	}); err != nil {
		return done, err
	}

	c.reads.templates.Forget()
	templates, err := c.instanceTemplates(ctx)
	if err != nil {
		return done, err
	}
	items = nil
	for name := range templates {
		items = append(items, item{key: "InstanceTemplate/" + name, name: name})
	}
	if err := del("instance template", items, func(it item) (*compute.Operation, error) {
		return c.Compute.InstanceTemplates.Delete(c.Project, it.name).Context(ctx).Do()
	}); err != nil {
		return done, err
	}

	c.reads.firewalls.Forget()
	firewalls, err := c.firewalls(ctx)
	if err != nil {
		return done, err
	}
	items = nil
	for name, f := range firewalls {
		if f.Description == c.ownedDescription() {
			items = append(items, item{key: "FirewallRule/" + name, name: name})
		}
	}
	if err := del("firewall rule", items, func(it item) (*compute.Operation, error) {
		return c.Compute.Firewalls.Delete(c.Project, it.name).Context(ctx).Do()
	}); err != nil {
		return done, err
	}

	c.reads.routes.Forget()
	routes, err := c.projectRoutes(ctx)
	if err != nil {
		return done, err
	}
	items = nil
	for _, r := range routes {
		if r.Description == c.ownedDescription() {
			items = append(items, item{key: "Route/" + r.Name, name: r.Name})
		}
	}
	if err := del("route", items, func(it item) (*compute.Operation, error) {
		return c.Compute.Routes.Delete(c.Project, it.name).Context(ctx).Do()
	}); err != nil {
		return done, err
	}

	items = nil
	err = c.Compute.Disks.AggregatedList(c.Project).Filter(c.ownerFilter()).Pages(ctx, func(l *compute.DiskAggregatedList) error {
		for _, scoped := range l.Items {
			for _, d := range scoped.Disks {
				if c.owns(d.Labels) {
					items = append(items, item{key: "Disk/" + d.Name, zone: lastSegment(d.Zone), name: d.Name})
				}
			}
		}
		return nil
	})
	if err != nil {
		return done, Classify("listing the cluster's disks", err)
	}
	if err := del("disk", items, func(it item) (*compute.Operation, error) {
		return c.Compute.Disks.Delete(c.Project, it.zone, it.name).Context(ctx).Do()
	}); err != nil {
		return done, err
	}

	if len(names) == 0 || c.dnsZone == "" {
		return done, nil
	}
	keys, err := c.deleteRecords(ctx, names, apply)
	return append(done, keys...), err
}

// ownedGroups are the cluster's managed instance groups of the zones of c.Region (every zone when it is "").
func (c *Cloud) ownedGroups(ctx context.Context, fresh bool) ([]*compute.InstanceGroupManager, error) {
	var zones []string
	if c.Region != "" {
		r, err := c.Compute.Regions.Get(c.Project, c.Region).Context(ctx).Do()
		if err != nil {
			return nil, Classify("reading region "+c.Region, err)
		}
		for _, z := range r.Zones {
			zones = append(zones, lastSegment(z))
		}
	} else {
		err := c.Compute.Zones.List(c.Project).Pages(ctx, func(l *compute.ZoneList) error {
			for _, z := range l.Items {
				zones = append(zones, z.Name)
			}
			return nil
		})
		if err != nil {
			return nil, Classify("listing the zones", err)
		}
	}
	var out []*compute.InstanceGroupManager
	for _, z := range zones {
		if fresh {
			c.reads.groups.Of(z).Forget()
		}
		all, err := c.groupManagers(ctx, z)
		if err != nil {
			return nil, err
		}
		for _, g := range all {
			if g.Description == c.ownedDescription() {
				out = append(out, g)
			}
		}
	}
	return out, nil
}

// deleteRecords deletes every supported record set of names in one change, and returns their keys.
func (c *Cloud) deleteRecords(ctx context.Context, names []string, apply bool) ([]string, error) {
	p, ok := c.DNSProvider().(*CloudDNS)
	if !ok {
		return nil, nil
	}
	p.NewRun()
	all, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	var changes []dnsChange
	seen := map[string]bool{}
	for _, n := range names {
		n = dnstasks.CanonicalName(n)
		if seen[n] { // a change that deletes one record set twice is refused by Cloud DNS
			continue
		}
		seen[n] = true
		for k := range all {
			if k.name == n {
				keys = append(keys, dnstasks.RecordKey(k.name, k.rrtype).String())
				changes = append(changes, dnsChange{key: k})
			}
		}
	}
	slices.Sort(keys)
	if !apply || len(changes) == 0 {
		return keys, nil
	}
	if err := p.send(ctx, changes); err != nil {
		return nil, fmt.Errorf("deleting the cluster's DNS records: %w", err)
	}
	return keys, nil
}

// DeleteUnusedTemplates deletes the cluster's instance templates that no managed instance group of the cluster
// uses, except the newest of each base name (a group may be about to use it): what template changes left
// behind. cloudup runs it after an apply. It returns the keys of what it deleted (apply) or would delete.
func (c *Cloud) DeleteUnusedTemplates(ctx context.Context, apply, fresh bool) ([]string, error) {
	groups, err := c.ownedGroups(ctx, fresh)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, g := range groups {
		used[lastSegment(g.InstanceTemplate)] = true
	}
	if fresh {
		c.reads.templates.Forget()
	}
	templates, err := c.instanceTemplates(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range unusedTemplates(templates, used, nil) {
		if apply {
			op, err := c.Compute.InstanceTemplates.Delete(c.Project, name).Context(ctx).Do()
			if err := c.mutate(ctx, "deleting instance template "+name, op, err); err != nil && !IsNotFound(err) {
				return out, err
			}
			engine.Logger(ctx).Info("deleted unused instance template", "name", name)
		}
		out = append(out, "InstanceTemplate/"+name)
	}
	return out, nil
}

// UnusedTemplatesAfter returns the names of the templates DeleteUnusedTemplates will delete after an apply of a
// graph whose managed instance groups are groups, as its dry run found them: each group then uses its template
// task's template (named by the SelfLink the task's Find sets), the newest of its base name once it is made.
// It reads no more than DeleteUnusedTemplates (without fresh) would.
func (c *Cloud) UnusedTemplatesAfter(ctx context.Context, groups []*InstanceGroupManager) ([]string, error) {
	planned := map[string]string{} // the template each group of the graph will use, by zone/name
	will := map[string]bool{}
	for _, g := range groups {
		if g.Zone == nil || g.Template == nil || g.Template.SelfLink == nil {
			return nil, fmt.Errorf("the template of managed instance group %s is not known: its dry run did not run", g.Key())
		}
		name := lastSegment(*g.Template.SelfLink)
		planned[*g.Zone+"/"+g.Name], will[name] = name, true
	}
	owned, err := c.ownedGroups(ctx, false)
	if err != nil {
		return nil, err
	}
	used := maps.Clone(will)
	for _, g := range owned {
		if _, ok := planned[lastSegment(g.Zone)+"/"+g.Name]; !ok {
			used[lastSegment(g.InstanceTemplate)] = true // a group the graph does not hold keeps its template
		}
	}
	templates, err := c.instanceTemplates(ctx)
	if err != nil {
		return nil, err
	}
	return unusedTemplates(templates, used, will), nil
}

// unusedTemplates are the names of templates, sorted, that are not used and not the newest of their base name;
// the templates of made (which an apply makes or keeps) are the newest of theirs.
func unusedTemplates(templates map[string]*compute.InstanceTemplate, used, made map[string]bool) []string {
	newest := map[string]string{} // by base name
	for name := range made {
		newest[baseName(name)] = name
	}
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		base := baseName(name)
		if n, ok := newest[base]; ok && made[n] {
			continue
		}
		t, n := templates[name], templates[newest[base]]
		if n == nil || t.CreationTimestamp > n.CreationTimestamp || t.CreationTimestamp == n.CreationTimestamp && name > n.Name {
			newest[base] = name
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		if !used[name] && newest[baseName(name)] != name {
			out = append(out, name)
		}
	}
	return out
}

// baseName is the base name of a template's real name (<base>-<hash8>).
func baseName(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		return name[:i]
	}
	return name
}
