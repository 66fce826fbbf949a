package fakegce

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"

	compute "google.golang.org/api/compute/v1"
)

// labelFingerprint is the fingerprint of a set of labels; GCE's of no labels is "42WmSpB8rSM=".
func labelFingerprint(labels map[string]string) string {
	if len(labels) == 0 {
		return "42WmSpB8rSM="
	}
	b, _ := json.Marshal(labels) // map keys are sorted
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// checkLabels refuses labels GCE would: keys [a-z][a-z0-9_-]{0,62}, values [a-z0-9_-]{0,63}, at most 64.
func checkLabels(labels map[string]string) error {
	if len(labels) > 64 {
		return invalid("Invalid value for field 'labels': too many labels (%d, at most 64).", len(labels))
	}
	for k, v := range labels {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			return invalid("Invalid value for field 'labels': '%s=%s'. Label keys must match [a-z][a-z0-9_-]{0,62} and values [a-z0-9_-]{0,63}.", k, v)
		}
	}
	return nil
}

func insertDisk(c *call) (any, error) {
	var d compute.Disk
	if err := c.decode(&d); err != nil {
		return nil, err
	}
	if err := checkName("resource.name", d.Name); err != nil {
		return nil, err
	}
	if err := checkLabels(d.Labels); err != nil {
		return nil, err
	}
	k := key(c.where, d.Name)
	if _, ok := c.p.disks[k]; ok {
		return nil, alreadyExists(c.thing("disks", d.Name))
	}
	if d.SizeGb == 0 {
		d.SizeGb = 10
	}
	if d.SizeGb < 0 || d.SizeGb > 65536 {
		return nil, invalid("Invalid value for field 'resource.sizeGb': '%d'.", d.SizeGb)
	}
	if d.Type == "" {
		d.Type = "pd-standard"
	}
	t, err := c.parseRef(d.Type, "diskTypes", "zones", c.where)
	if err != nil {
		return nil, err
	}
	d.Type = t.link()
	d.Kind, d.Id, d.CreationTimestamp, d.Status = "compute#disk", c.s.newID(), now(), "READY"
	d.Zone, d.SelfLink = c.scopeLink(), c.p.link("zones", c.where, "disks", d.Name)
	d.LabelFingerprint, d.Users = labelFingerprint(d.Labels), nil
	d.PhysicalBlockSizeBytes = 4096
	c.p.disks[k] = &d
	if n := c.s.faults.DiskInvisibleCalls; n > 0 {
		c.p.invisible[k] = n
	}
	return c.newOp("insert", d.SelfLink, d.Id)
}

// visibleDisk is the disk of zone/name as disks.get and lists see it (nil while invisible); it counts the call.
func (p *project) visibleDisk(k string) *compute.Disk {
	if n := p.invisible[k]; n > 0 {
		return nil
	}
	return p.disks[k]
}

// seenDisks counts one disks read against the invisibility of every new disk.
func (p *project) seenDisks() {
	for k, n := range p.invisible {
		if n <= 1 {
			delete(p.invisible, k)
		} else {
			p.invisible[k] = n - 1
		}
	}
}

func (c *call) disk(name string) (*compute.Disk, error) {
	d, ok := c.p.disks[key(c.where, name)]
	if !ok {
		return nil, notFound(c.thing("disks", name))
	}
	return d, nil
}

func getDisk(c *call) (any, error) {
	d := c.p.visibleDisk(key(c.where, c.names[0]))
	c.p.seenDisks()
	if d == nil {
		return nil, notFound(c.thing("disks", c.names[0]))
	}
	return d, nil
}

func listDisks(c *call) (any, error) {
	items := map[string]*compute.Disk{}
	for k, d := range c.p.disks {
		if d.Zone == c.scopeLink() && c.p.visibleDisk(k) != nil {
			items[d.Name] = d
		}
	}
	c.p.seenDisks()
	out, next, err := page(c, items, nil)
	return &compute.DiskList{Kind: "compute#diskList", Items: out, NextPageToken: next, SelfLink: c.p.link("zones", c.where, "disks")}, err
}

func aggregatedDisks(c *call) (any, error) {
	items := map[string]*compute.Disk{}
	for k, d := range c.p.disks {
		if c.p.visibleDisk(k) != nil {
			items[k] = d
		}
	}
	c.p.seenDisks()
	out, next, err := page(c, items, nil)
	if err != nil {
		return nil, err
	}
	list := &compute.DiskAggregatedList{Kind: "compute#diskAggregatedList", Items: map[string]compute.DisksScopedList{},
		NextPageToken: next, SelfLink: c.p.link("aggregated", "disks")}
	for _, d := range out {
		scope := "zones/" + lastElem(d.Zone)
		l := list.Items[scope]
		l.Disks = append(l.Disks, d)
		list.Items[scope] = l
	}
	return list, nil
}

func deleteDisk(c *call) (any, error) {
	d, err := c.disk(c.names[0])
	if err != nil {
		return nil, err
	}
	if len(d.Users) > 0 {
		return nil, errorf(http.StatusBadRequest, "resourceInUseByAnotherResource",
			"The disk resource '%s' is already being used by '%s'", c.thing("disks", d.Name), trimBase(d.Users[0]))
	}
	delete(c.p.disks, key(c.where, d.Name))
	delete(c.p.invisible, key(c.where, d.Name))
	return c.newOp("delete", d.SelfLink, d.Id)
}

func setDiskLabels(c *call) (any, error) {
	d, err := c.disk(c.names[0])
	if err != nil {
		return nil, err
	}
	var req compute.ZoneSetLabelsRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if err := checkLabels(req.Labels); err != nil {
		return nil, err
	}
	if req.LabelFingerprint != d.LabelFingerprint && !(req.LabelFingerprint == "" && len(d.Labels) == 0) {
		return nil, errorf(http.StatusPreconditionFailed, "conditionNotMet",
			"Labels fingerprint either invalid or resource labels have changed")
	}
	d.Labels = maps.Clone(req.Labels)
	d.LabelFingerprint = labelFingerprint(d.Labels)
	return c.newOp("setLabels", d.SelfLink, d.Id)
}

func resizeDisk(c *call) (any, error) {
	d, err := c.disk(c.names[0])
	if err != nil {
		return nil, err
	}
	var req compute.DisksResizeRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if req.SizeGb <= d.SizeGb {
		return nil, invalid("Invalid value for field 'sizeGb': '%s'. Requested size must be greater than the current size %d GB.",
			strconv.FormatInt(req.SizeGb, 10), d.SizeGb)
	}
	d.SizeGb = req.SizeGb
	return c.newOp("resize", d.SelfLink, d.Id)
}

// --- instances ---

func (c *call) instance(name string) (*compute.Instance, error) {
	in, ok := c.p.instances[key(c.where, name)]
	if !ok {
		return nil, notFound(c.thing("instances", name))
	}
	return in, nil
}

func getInstance(c *call) (any, error) { return c.instance(c.names[0]) }

func listInstances(c *call) (any, error) {
	items := map[string]*compute.Instance{}
	for _, in := range c.p.instances {
		if in.Zone == c.scopeLink() {
			items[in.Name] = in
		}
	}
	out, next, err := page(c, items, nil)
	return &compute.InstanceList{Kind: "compute#instanceList", Items: out, NextPageToken: next, SelfLink: c.p.link("zones", c.where, "instances")}, err
}

func aggregatedInstances(c *call) (any, error) {
	out, next, err := page(c, c.p.instances, nil)
	if err != nil {
		return nil, err
	}
	list := &compute.InstanceAggregatedList{Kind: "compute#instanceAggregatedList", Items: map[string]compute.InstancesScopedList{},
		NextPageToken: next, SelfLink: c.p.link("aggregated", "instances")}
	for _, in := range out {
		scope := "zones/" + lastElem(in.Zone)
		l := list.Items[scope]
		l.Instances = append(l.Instances, in)
		list.Items[scope] = l
	}
	return list, nil
}

func deleteInstance(c *call) (any, error) {
	in, err := c.instance(c.names[0])
	if err != nil {
		return nil, err
	}
	c.p.removeInstance(c.s, in)
	return c.newOp("delete", in.SelfLink, in.Id)
}

// removeInstance deletes an instance: its disks lose it as a user; it leaves its group.
func (p *project) removeInstance(s *Server, in *compute.Instance) {
	for _, ad := range in.Disks {
		for _, d := range p.disks {
			if d.SelfLink == ad.Source {
				d.Users = slices.DeleteFunc(d.Users, func(u string) bool { return u == in.SelfLink })
			}
		}
	}
	delete(p.instances, key(lastElem(in.Zone), in.Name))
	delete(p.groupOf, in.SelfLink)
	s.instanceOrder = slices.DeleteFunc(s.instanceOrder, func(l string) bool { return l == in.SelfLink })
	if s.metadataInstance == in.Name {
		s.metadataInstance = ""
	}
}

func attachDisk(c *call) (any, error) {
	in, err := c.instance(c.names[0])
	if err != nil {
		return nil, err
	}
	var ad compute.AttachedDisk
	if err := c.decode(&ad); err != nil {
		return nil, err
	}
	if ad.Source == "" {
		return nil, invalid("Required field 'source' not specified")
	}
	r, err := c.parseRef(ad.Source, "disks", "zones", c.where)
	if err != nil {
		return nil, err
	}
	if r.project != c.p.name || r.scope != "zones" {
		return nil, invalid("Invalid value for field 'resource.source': '%s'.", ad.Source)
	}
	if r.where != c.where {
		return nil, invalid("Invalid value for field 'resource.source': '%s'. Disk must be in the same zone as the instance (%s).", ad.Source, c.where)
	}
	d, ok := c.p.disks[r.key()]
	if !ok {
		return nil, notFound(r.path())
	}
	if ad.Mode == "" {
		ad.Mode = "READ_WRITE"
	}
	if ad.DeviceName == "" {
		ad.DeviceName = d.Name
	}
	for _, u := range d.Users {
		if u == in.SelfLink {
			return nil, invalid("The disk resource '%s' is already attached to this instance", r.path())
		}
		if ad.Mode == "READ_WRITE" || c.p.attachedMode(d.SelfLink, u) == "READ_WRITE" {
			return nil, errorf(http.StatusBadRequest, "resourceInUseByAnotherResource",
				"The disk resource '%s' is already being used by '%s'", r.path(), trimBase(u))
		}
	}
	for _, other := range in.Disks {
		if other.DeviceName == ad.DeviceName {
			return nil, invalid("Invalid value for field 'resource.deviceName': '%s'. The device name is already in use on the instance.", ad.DeviceName)
		}
	}
	index := int64(0)
	for _, other := range in.Disks {
		index = max(index, other.Index+1)
	}
	in.Disks = append(in.Disks, &compute.AttachedDisk{Kind: "compute#attachedDisk", Source: d.SelfLink, DeviceName: ad.DeviceName,
		Mode: ad.Mode, Type: "PERSISTENT", Index: index, Interface: "SCSI", AutoDelete: ad.AutoDelete, DiskSizeGb: d.SizeGb})
	d.Users = append(d.Users, in.SelfLink)
	d.LastAttachTimestamp = now()
	return c.newOp("attachDisk", in.SelfLink, in.Id)
}

// attachedMode is the mode disk is attached in to the instance of selfLink inst.
func (p *project) attachedMode(disk, inst string) string {
	for _, in := range p.instances {
		if in.SelfLink == inst {
			for _, ad := range in.Disks {
				if ad.Source == disk {
					return ad.Mode
				}
			}
		}
	}
	return ""
}

func detachDisk(c *call) (any, error) {
	in, err := c.instance(c.names[0])
	if err != nil {
		return nil, err
	}
	dev := c.query.Get("deviceName")
	i := slices.IndexFunc(in.Disks, func(ad *compute.AttachedDisk) bool { return ad.DeviceName == dev })
	if dev == "" || i < 0 {
		return nil, invalid("Invalid value for field 'deviceName': '%s'. No attached disk found with device name '%s'", dev, dev)
	}
	src := in.Disks[i].Source
	in.Disks = slices.Delete(in.Disks, i, i+1)
	for _, d := range c.p.disks {
		if d.SelfLink == src {
			d.Users = slices.DeleteFunc(d.Users, func(u string) bool { return u == in.SelfLink })
			d.LastDetachTimestamp = now()
		}
	}
	return c.newOp("detachDisk", in.SelfLink, in.Id)
}

func setMetadata(c *call) (any, error) {
	in, err := c.instance(c.names[0])
	if err != nil {
		return nil, err
	}
	var md compute.Metadata
	if err := c.decode(&md); err != nil {
		return nil, err
	}
	if md.Fingerprint != in.Metadata.Fingerprint {
		return nil, errorf(http.StatusPreconditionFailed, "conditionNotMet",
			"Supplied fingerprint does not match current metadata fingerprint.")
	}
	in.Metadata = &compute.Metadata{Kind: "compute#metadata", Items: md.Items}
	in.Metadata.Fingerprint = metadataFingerprint(in.Metadata.Items)
	return c.newOp("setMetadata", in.SelfLink, in.Id)
}

func metadataFingerprint(items []*compute.MetadataItems) string {
	b, _ := json.Marshal(items)
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:8])
}

func setInstanceLabels(c *call) (any, error) {
	in, err := c.instance(c.names[0])
	if err != nil {
		return nil, err
	}
	var req compute.InstancesSetLabelsRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	if err := checkLabels(req.Labels); err != nil {
		return nil, err
	}
	if req.LabelFingerprint != in.LabelFingerprint && !(req.LabelFingerprint == "" && len(in.Labels) == 0) {
		return nil, errorf(http.StatusPreconditionFailed, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed")
	}
	in.Labels = maps.Clone(req.Labels)
	in.LabelFingerprint = labelFingerprint(in.Labels)
	return c.newOp("setLabels", in.SelfLink, in.Id)
}
