package fakegce

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"

	compute "google.golang.org/api/compute/v1"
)

func insertTemplate(c *call) (any, error) {
	var t compute.InstanceTemplate
	if err := c.decode(&t); err != nil {
		return nil, err
	}
	if err := checkName("resource.name", t.Name); err != nil {
		return nil, err
	}
	if _, ok := c.p.templates[t.Name]; ok {
		return nil, alreadyExists(c.thing("instanceTemplates", t.Name))
	}
	if t.Properties == nil {
		return nil, invalid("Required field 'resource.properties' not specified")
	}
	if t.Properties.MachineType == "" {
		return nil, invalid("Required field 'resource.properties.machineType' not specified")
	}
	if err := checkLabels(t.Properties.Labels); err != nil {
		return nil, err
	}
	for _, ni := range t.Properties.NetworkInterfaces {
		if ni.Network != "" {
			n, err := c.networkRef("resource.properties.networkInterfaces[].network", ni.Network)
			if err != nil {
				return nil, err
			}
			ni.Network = n.SelfLink
		}
		if ni.Subnetwork != "" {
			r, err := c.parseRef(ni.Subnetwork, "subnetworks", "regions", "")
			if err != nil {
				return nil, err
			}
			s, ok := c.p.subnetworks[r.key()]
			if !ok {
				return nil, notFound(r.path())
			}
			ni.Subnetwork = s.SelfLink
			if ni.Network == "" {
				ni.Network = s.Network
			}
		}
	}
	if t.Properties.Metadata != nil {
		t.Properties.Metadata.Kind = "compute#metadata"
		t.Properties.Metadata.Fingerprint = metadataFingerprint(t.Properties.Metadata.Items)
	}
	t.Kind, t.Id, t.CreationTimestamp, t.SelfLink = "compute#instanceTemplate", c.s.newID(), now(), c.p.link("global", "instanceTemplates", t.Name)
	c.p.templates[t.Name] = &t
	return c.newOp("insert", t.SelfLink, t.Id)
}

func getTemplate(c *call) (any, error) {
	t, ok := c.p.templates[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("instanceTemplates", c.names[0]))
	}
	return t, nil
}

func listTemplates(c *call) (any, error) {
	out, next, err := page(c, c.p.templates, nil)
	return &compute.InstanceTemplateList{Kind: "compute#instanceTemplateList", Items: out, NextPageToken: next,
		SelfLink: c.p.link("global", "instanceTemplates")}, err
}

func deleteTemplate(c *call) (any, error) {
	t, ok := c.p.templates[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("instanceTemplates", c.names[0]))
	}
	for _, g := range c.p.groups {
		if g.InstanceTemplate == t.SelfLink {
			return nil, errorf(http.StatusBadRequest, "resourceInUseByAnotherResource",
				"The instance_template resource '%s' is already being used by '%s'", c.thing("instanceTemplates", t.Name), trimBase(g.SelfLink))
		}
	}
	delete(c.p.templates, t.Name)
	return c.newOp("delete", t.SelfLink, t.Id)
}

// templateRef resolves a group's reference to a template of the project.
func (c *call) templateRef(s string) (*compute.InstanceTemplate, error) {
	if s == "" {
		return nil, invalid("Required field 'resource.instanceTemplate' not specified")
	}
	r, err := c.parseRef(s, "instanceTemplates", "global", "")
	if err != nil {
		return nil, err
	}
	t, ok := c.p.templates[r.name]
	if !ok || r.project != c.p.name {
		return nil, invalid("Invalid value for field 'resource.instanceTemplate': '%s'. The referenced instance template does not exist.", s)
	}
	return t, nil
}

func insertGroup(c *call) (any, error) {
	var g compute.InstanceGroupManager
	if err := c.decode(&g); err != nil {
		return nil, err
	}
	if err := checkName("resource.name", g.Name); err != nil {
		return nil, err
	}
	k := key(c.where, g.Name)
	if _, ok := c.p.groups[k]; ok {
		return nil, alreadyExists(c.thing("instanceGroupManagers", g.Name))
	}
	if g.InstanceTemplate == "" && len(g.Versions) > 0 {
		g.InstanceTemplate = g.Versions[0].InstanceTemplate
	}
	t, err := c.templateRef(g.InstanceTemplate)
	if err != nil {
		return nil, err
	}
	if g.BaseInstanceName == "" {
		g.BaseInstanceName = g.Name
	}
	if err := checkName("resource.baseInstanceName", g.BaseInstanceName+"-abcd"); err != nil {
		return nil, err
	}
	if g.TargetSize < 0 {
		return nil, invalid("Invalid value for field 'resource.targetSize': '%d'.", g.TargetSize)
	}
	g.Kind, g.Id, g.CreationTimestamp = "compute#instanceGroupManager", c.s.newID(), now()
	g.Zone, g.SelfLink = c.scopeLink(), c.p.link("zones", c.where, "instanceGroupManagers", g.Name)
	g.InstanceGroup = c.p.link("zones", c.where, "instanceGroups", g.Name)
	g.InstanceTemplate = t.SelfLink
	g.Versions = []*compute.InstanceGroupManagerVersion{{InstanceTemplate: t.SelfLink, TargetSize: nil}}
	g.Status = &compute.InstanceGroupManagerStatus{IsStable: true, VersionTarget: &compute.InstanceGroupManagerStatusVersionTarget{IsReached: true}}
	g.Fingerprint = labelFingerprint(map[string]string{"v": strconv.FormatUint(c.s.newID(), 10)})
	g.ForceSendFields = []string{"TargetSize"}
	c.p.groups[k] = &g
	op, err := c.newOp("insert", g.SelfLink, g.Id)
	c.scaleGroup(&g)
	return op, err
}

func (c *call) group(name string) (*compute.InstanceGroupManager, error) {
	g, ok := c.p.groups[key(c.where, name)]
	if !ok {
		return nil, notFound(c.thing("instanceGroupManagers", name))
	}
	return g, nil
}

func getGroup(c *call) (any, error) {
	g, err := c.group(c.names[0])
	if err != nil {
		return nil, err
	}
	c.p.summarise(g)
	return g, nil
}

func listGroups(c *call) (any, error) {
	items := map[string]*compute.InstanceGroupManager{}
	for _, g := range c.p.groups {
		if g.Zone == c.scopeLink() {
			c.p.summarise(g)
			items[g.Name] = g
		}
	}
	out, next, err := page(c, items, nil)
	return &compute.InstanceGroupManagerList{Kind: "compute#instanceGroupManagerList", Items: out, NextPageToken: next,
		SelfLink: c.p.link("zones", c.where, "instanceGroupManagers")}, err
}

// members are the selfLinks of the group's instances, in name order.
func (p *project) members(g *compute.InstanceGroupManager) []string {
	var out []string
	for in, group := range p.groupOf {
		if group == g.SelfLink {
			out = append(out, in)
		}
	}
	slices.Sort(out)
	return out
}

// summarise sets the group's currentActions: every instance is running, none is being changed.
func (p *project) summarise(g *compute.InstanceGroupManager) {
	g.CurrentActions = &compute.InstanceGroupManagerActionsSummary{None: int64(len(p.members(g))), ForceSendFields: []string{"None"}}
}

func deleteGroup(c *call) (any, error) {
	g, err := c.group(c.names[0])
	if err != nil {
		return nil, err
	}
	for _, l := range c.p.members(g) {
		if in, ok := c.p.instances[key(c.where, lastElem(l))]; ok {
			c.p.removeInstance(c.s, in)
		}
	}
	delete(c.p.groups, key(c.where, g.Name))
	return c.newOp("delete", g.SelfLink, g.Id)
}

func resizeGroup(c *call) (any, error) {
	g, err := c.group(c.names[0])
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(c.query.Get("size"), 10, 64)
	if err != nil || n < 0 {
		return nil, invalid("Invalid value for field 'size': '%s'. Must be a non-negative integer.", c.query.Get("size"))
	}
	g.TargetSize = n
	op, err := c.newOp("compute.instanceGroupManagers.resize", g.SelfLink, g.Id)
	c.scaleGroup(g)
	return op, err
}

func setGroupTemplate(c *call) (any, error) {
	g, err := c.group(c.names[0])
	if err != nil {
		return nil, err
	}
	var req compute.InstanceGroupManagersSetInstanceTemplateRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	t, err := c.templateRef(req.InstanceTemplate)
	if err != nil {
		return nil, err
	}
	g.InstanceTemplate = t.SelfLink
	g.Versions = []*compute.InstanceGroupManagerVersion{{InstanceTemplate: t.SelfLink}}
	return c.newOp("compute.instanceGroupManagers.setInstanceTemplate", g.SelfLink, g.Id)
}

// patchGroup merges targetSize, instanceTemplate, versions and the like into the group.
func patchGroup(c *call) (any, error) {
	old, err := c.group(c.names[0])
	if err != nil {
		return nil, err
	}
	g := *old
	if err := patchJSON(&g, c.body); err != nil {
		return nil, errorf(http.StatusBadRequest, "parseError", "Invalid JSON payload received. %v", err)
	}
	if g.Name != old.Name || g.BaseInstanceName != old.BaseInstanceName {
		return nil, invalid("Invalid value for field 'resource.name': '%s'. The name and base instance name cannot change.", g.Name)
	}
	if len(g.Versions) > 0 && g.Versions[0].InstanceTemplate != old.InstanceTemplate {
		g.InstanceTemplate = g.Versions[0].InstanceTemplate
	}
	t, err := c.templateRef(g.InstanceTemplate)
	if err != nil {
		return nil, err
	}
	if g.TargetSize < 0 {
		return nil, invalid("Invalid value for field 'resource.targetSize': '%d'.", g.TargetSize)
	}
	g.InstanceTemplate = t.SelfLink
	g.Versions = []*compute.InstanceGroupManagerVersion{{InstanceTemplate: t.SelfLink}}
	g.Kind, g.Id, g.SelfLink, g.Zone, g.CreationTimestamp, g.InstanceGroup = old.Kind, old.Id, old.SelfLink, old.Zone, old.CreationTimestamp, old.InstanceGroup
	g.ForceSendFields = []string{"TargetSize"}
	*old = g
	op, err := c.newOp("patch", old.SelfLink, old.Id)
	c.scaleGroup(old)
	return op, err
}

func listManagedInstances(c *call) (any, error) {
	g, err := c.group(c.names[0])
	if err != nil {
		return nil, err
	}
	var out []*compute.ManagedInstance
	for _, l := range c.p.members(g) {
		in, ok := c.p.instances[key(c.where, lastElem(l))]
		if !ok {
			continue
		}
		tmpl := ""
		for _, it := range in.Metadata.Items {
			if it.Key == "instance-template" && it.Value != nil {
				tmpl = computeBase + *it.Value
			}
		}
		out = append(out, &compute.ManagedInstance{Instance: in.SelfLink, Id: in.Id, InstanceStatus: in.Status, CurrentAction: "NONE",
			Name: in.Name, Version: &compute.ManagedInstanceVersion{InstanceTemplate: tmpl}})
	}
	return &compute.InstanceGroupManagersListManagedInstancesResponse{ManagedInstances: out}, nil
}

// scaleGroup makes or deletes instances until the group has its target size: new ones from its template, the
// newest names deleted first.
func (c *call) scaleGroup(g *compute.InstanceGroupManager) {
	members := c.p.members(g)
	for int64(len(members)) > g.TargetSize {
		l := members[len(members)-1]
		members = members[:len(members)-1]
		if in, ok := c.p.instances[key(c.where, lastElem(l))]; ok {
			c.p.removeInstance(c.s, in)
		}
	}
	t := c.p.templates[lastElem(g.InstanceTemplate)]
	for n := int64(len(members)); n < g.TargetSize && t != nil; n++ {
		c.makeInstance(g, t)
	}
}

const nameChars = "abcdefghijklmnopqrstuvwxyz0123456789"

// makeInstance makes a running instance of group g from template t.
func (c *call) makeInstance(g *compute.InstanceGroupManager, t *compute.InstanceTemplate) *compute.Instance {
	var name string
	for {
		b := make([]byte, 4)
		for i := range b {
			b[i] = nameChars[c.s.names.IntN(len(nameChars))]
		}
		name = g.BaseInstanceName + "-" + string(b)
		if _, taken := c.p.instances[key(c.where, name)]; !taken {
			break
		}
	}
	pr := t.Properties
	in := &compute.Instance{Kind: "compute#instance", Id: c.s.newID(), Name: name, CreationTimestamp: now(), Status: "RUNNING",
		Zone: c.scopeLink(), SelfLink: c.p.link("zones", c.where, "instances", name),
		MachineType: c.p.link("zones", c.where, "machineTypes", lastElem(pr.MachineType)),
		Labels:      maps.Clone(pr.Labels), CanIpForward: pr.CanIpForward, ServiceAccounts: pr.ServiceAccounts,
		Scheduling: pr.Scheduling, Description: pr.Description}
	in.LabelFingerprint = labelFingerprint(in.Labels)
	if pr.Tags != nil {
		in.Tags = &compute.Tags{Items: slices.Clone(pr.Tags.Items), Fingerprint: labelFingerprint(map[string]string{"tags": fmt.Sprint(pr.Tags.Items)})}
	}
	var items []*compute.MetadataItems
	if pr.Metadata != nil {
		for _, it := range pr.Metadata.Items {
			v := *it
			items = append(items, &v)
		}
	}
	tmplPath, groupPath := trimBase(t.SelfLink), trimBase(g.InstanceGroup)
	items = append(items, &compute.MetadataItems{Key: "instance-template", Value: &tmplPath},
		&compute.MetadataItems{Key: "created-by", Value: &groupPath})
	in.Metadata = &compute.Metadata{Kind: "compute#metadata", Items: items, Fingerprint: metadataFingerprint(items)}
	for i, ni := range pr.NetworkInterfaces {
		nic := &compute.NetworkInterface{Kind: "compute#networkInterface", Name: fmt.Sprintf("nic%d", i), Network: ni.Network,
			Subnetwork: ni.Subnetwork, StackType: "IPV4_ONLY"}
		if nic.Subnetwork == "" {
			// The network's subnetwork in the group's region, as GCE picks it for an auto-mode network.
			for _, s := range c.p.subnetworks {
				if s.Network == ni.Network && s.Region == c.p.link("regions", regionOf(c.where)) {
					nic.Subnetwork = s.SelfLink
				}
			}
		}
		nic.NetworkIP = c.p.allocateIP(nic.Subnetwork)
		for range ni.AccessConfigs {
			c.p.nextNAT++
			nic.AccessConfigs = append(nic.AccessConfigs, &compute.AccessConfig{Kind: "compute#accessConfig", Type: "ONE_TO_ONE_NAT",
				Name: "External NAT", NatIP: fmt.Sprintf("203.0.113.%d", 1+(c.p.nextNAT-1)%254), NetworkTier: "PREMIUM"})
		}
		in.NetworkInterfaces = append(in.NetworkInterfaces, nic)
	}
	for i, ad := range pr.Disks {
		if ad.Boot || i == 0 {
			in.Disks = append(in.Disks, &compute.AttachedDisk{Kind: "compute#attachedDisk", Boot: true, AutoDelete: true,
				DeviceName: "persistent-disk-0", Mode: "READ_WRITE", Type: "PERSISTENT", Interface: "SCSI", Index: 0,
				Source: c.p.link("zones", c.where, "disks", name)})
			break
		}
	}
	c.p.instances[key(c.where, name)] = in
	c.p.groupOf[in.SelfLink] = g.SelfLink
	c.s.instanceOrder = append(c.s.instanceOrder, in.SelfLink)
	return in
}

// allocateIP takes the next free address of a subnetwork's range (from .2; 10.128.0.0/20 when there is no
// subnetwork).
func (p *project) allocateIP(subnet string) string {
	cidr := "10.128.0.0/20"
	for _, s := range p.subnetworks {
		if s.SelfLink == subnet {
			cidr = s.IpCidrRange
		}
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return ""
	}
	for {
		p.nextIP[subnet]++
		n := p.nextIP[subnet] + 1
		a := prefix.Addr().As4()
		v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		v += n
		addr := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if !prefix.Contains(addr) {
			p.nextIP[subnet] = 0
			return prefix.Addr().String()
		}
		taken := false
		for _, in := range p.instances {
			for _, ni := range in.NetworkInterfaces {
				taken = taken || ni.NetworkIP == addr.String()
			}
		}
		if !taken {
			return addr.String()
		}
	}
}
