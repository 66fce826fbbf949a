package fakegce

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"time"

	compute "google.golang.org/api/compute/v1"
)

// project is the state of one project: its compute resources, by scope/name keys, and its Cloud DNS zones.
type project struct {
	name   string
	number uint64

	disks       map[string]*compute.Disk     // zone/name
	instances   map[string]*compute.Instance // zone/name
	networks    map[string]*compute.Network
	subnetworks map[string]*compute.Subnetwork // region/name
	firewalls   map[string]*compute.Firewall
	routes      map[string]*compute.Route
	templates   map[string]*compute.InstanceTemplate
	groups      map[string]*compute.InstanceGroupManager // zone/name
	// requests are the operations of the mutating calls that carried a requestId.
	requests map[string]*operation
	// invisible counts the disks.get/list calls a new disk is still unknown to, by zone/name.
	invisible map[string]int
	// groupTemplates is the template each managed instance was made from, by instance selfLink.
	groupOf map[string]string
	// nextIP is the next host number of each subnetwork's range, by subnetwork selfLink.
	nextIP  map[string]uint32
	nextNAT uint32

	zones map[string]*dnsZone
}

// project returns the project, made on first use. Call it with s.mu held.
func (s *Server) project(name string) *project {
	if p, ok := s.projects[name]; ok {
		return p
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	p := &project{name: name, number: 100_000_000_000 + h.Sum64()%900_000_000_000,
		disks: map[string]*compute.Disk{}, instances: map[string]*compute.Instance{}, networks: map[string]*compute.Network{},
		subnetworks: map[string]*compute.Subnetwork{}, firewalls: map[string]*compute.Firewall{}, routes: map[string]*compute.Route{},
		templates: map[string]*compute.InstanceTemplate{}, groups: map[string]*compute.InstanceGroupManager{},
		requests: map[string]*operation{}, invisible: map[string]int{}, groupOf: map[string]string{},
		nextIP: map[string]uint32{}, zones: map[string]*dnsZone{}}
	s.projects[name] = p
	return p
}

const computeBase = "https://www.googleapis.com/compute/v1/"

// link is the selfLink of a thing of the project: link("zones", "us-central1-a", "disks", "d").
func (p *project) link(parts ...string) string {
	return computeBase + "projects/" + p.name + "/" + strings.Join(parts, "/")
}

var (
	zoneRE   = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+-[a-z]$`)
	regionRE = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)
	nameRE   = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

func validZone(z string) bool   { return zoneRE.MatchString(z) }
func validRegion(r string) bool { return regionRE.MatchString(r) }
func regionOf(zone string) string {
	return zone[:strings.LastIndex(zone, "-")]
}

// checkName refuses a name GCE would (RFC 1035, at most 63 characters).
func checkName(field, name string) error {
	if !nameRE.MatchString(name) {
		return invalid("Invalid value for field '%s': '%s'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'", field, name)
	}
	return nil
}

// ref is a parsed reference to a resource: "https://.../projects/p/zones/z/disks/d", "projects/p/global/networks/n",
// "zones/z/disks/d", "global/networks/n", or a bare name (then scope and where are the caller's defaults).
type ref struct {
	project, scope, where, coll, name string
}

// parseRef parses a reference to a thing of collection coll; defScope/defWhere complete a bare name or a
// relative path without the project.
func (c *call) parseRef(s, coll, defScope, defWhere string) (ref, error) {
	r := ref{project: c.p.name, scope: defScope, where: defWhere, coll: coll}
	rest := s
	if i := strings.Index(rest, "/projects/"); i >= 0 {
		rest = rest[i+1:]
	}
	elems := strings.Split(strings.Trim(rest, "/"), "/")
	if len(elems) >= 2 && elems[0] == "projects" {
		r.project, elems = elems[1], elems[2:]
	}
	switch {
	case len(elems) == 1:
		r.name = elems[0]
	case len(elems) == 3 && elems[0] == "global":
		r.scope, r.where, r.coll, r.name = "global", "", elems[1], elems[2]
	case len(elems) == 4 && (elems[0] == "zones" || elems[0] == "regions"):
		r.scope, r.where, r.coll, r.name = elems[0], elems[1], elems[2], elems[3]
	default:
		return r, invalid("Invalid value for field '%s': '%s'. The URL is malformed.", coll, s)
	}
	if r.coll != coll || r.name == "" {
		return r, invalid("Invalid value for field '%s': '%s'. The URL is malformed.", coll, s)
	}
	return r, nil
}

// link is the selfLink the reference names.
func (r ref) link() string {
	if r.scope == "global" {
		return computeBase + "projects/" + r.project + "/global/" + r.coll + "/" + r.name
	}
	return computeBase + "projects/" + r.project + "/" + r.scope + "/" + r.where + "/" + r.coll + "/" + r.name
}

// key is the key of the thing in its project's map.
func (r ref) key() string {
	if r.scope == "global" {
		return r.name
	}
	return key(r.where, r.name)
}

// path is the reference without the host, as GCE names a resource in its messages.
func (r ref) path() string { return strings.TrimPrefix(r.link(), computeBase) }

// scopeLink is the selfLink of the call's zone or region.
func (c *call) scopeLink() string {
	return c.p.link(c.scope, c.where)
}

// thing is the path of a named thing of the call's scope, for messages: "projects/p/zones/z/disks/d".
func (c *call) thing(coll, name string) string {
	if c.scope == "global" {
		return "projects/" + c.p.name + "/global/" + coll + "/" + name
	}
	return "projects/" + c.p.name + "/" + c.scope + "/" + c.where + "/" + coll + "/" + name
}

func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000-07:00") }

// --- operations ---

// operation is an Operation and the polls it has had.
type operation struct {
	s     *Server
	op    *compute.Operation
	polls int
	slow  int
}

// answer is the operation as a poll sees it now, without counting a poll.
func (o *operation) answer() *compute.Operation {
	op := *o.op
	switch {
	case o.polls == 0:
		op.Status, op.Progress = "PENDING", 0
	case o.polls <= 1+o.slow:
		op.Status, op.Progress = "RUNNING", 50
		op.StartTime = op.InsertTime
	default:
		op.Status, op.Progress = "DONE", 100
		op.StartTime, op.EndTime = op.InsertTime, op.InsertTime
	}
	return &op
}

// newOp records the operation of a mutation of the call's scope on target (a selfLink), and answers it.
func (c *call) newOp(kind, target string, targetID uint64) (*compute.Operation, error) {
	s := c.s
	id := s.newID()
	name := fmt.Sprintf("operation-%d-%x", time.Now().UnixMilli(), id)
	op := &compute.Operation{Kind: "compute#operation", Id: id, Name: name, OperationType: kind, TargetLink: target,
		TargetId: targetID, InsertTime: now(), User: "fakegce@kubeup.dev", ClientOperationId: c.request}
	switch c.scope {
	case "zones":
		op.Zone = c.scopeLink()
		op.SelfLink = c.p.link("zones", c.where, "operations", name)
	case "regions":
		op.Region = c.scopeLink()
		op.SelfLink = c.p.link("regions", c.where, "operations", name)
	default:
		op.SelfLink = c.p.link("global", "operations", name)
	}
	o := &operation{s: s, op: op, slow: s.faults.SlowOperations}
	s.ops[name] = o
	if c.request != "" {
		c.p.requests[c.request] = o
	}
	return o.answer(), nil
}

// getOp answers operations.get (wait: operations.wait) of the call's scope.
func getOp(wait bool) func(c *call) (any, error) {
	return func(c *call) (any, error) {
		name := c.names[0]
		o, ok := c.s.ops[name]
		if !ok || !strings.HasPrefix(o.op.SelfLink, c.p.link(c.scopeParts()...)+"/operations/") {
			return nil, notFound(c.thing("operations", name))
		}
		o.polls++
		if wait && o.polls <= 1+o.slow && o.slow == 0 {
			o.polls = 2 + o.slow
		}
		return o.answer(), nil
	}
}

func (c *call) scopeParts() []string {
	if c.scope == "global" {
		return []string{"global"}
	}
	return []string{c.scope, c.where}
}

// --- zones, regions, projects, images ---

// knownZones are what zones.list and regions.list answer (any zone named like one is served).
var knownZones = []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f", "us-east1-b", "us-east1-c",
	"us-east1-d", "europe-west1-b", "europe-west1-c", "europe-west1-d"}

func (c *call) zone(name string) *compute.Zone {
	return &compute.Zone{Kind: "compute#zone", Name: name, Id: zoneID(name), Status: "UP", Region: c.p.link("regions", regionOf(name)),
		SelfLink: c.p.link("zones", name), Description: name, CreationTimestamp: "2020-01-01T00:00:00.000-07:00"}
}

func (c *call) region(name string) *compute.Region {
	r := &compute.Region{Kind: "compute#region", Name: name, Id: zoneID(name), Status: "UP", SelfLink: c.p.link("regions", name),
		Description: name, CreationTimestamp: "2020-01-01T00:00:00.000-07:00"}
	for _, z := range knownZones {
		if regionOf(z) == name {
			r.Zones = append(r.Zones, c.p.link("zones", z))
		}
	}
	return r
}

func zoneID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return 2000 + h.Sum64()%1000
}

func getZone(c *call) (any, error) { return c.zone(c.where), nil }

func listZones(c *call) (any, error) {
	items := map[string]*compute.Zone{}
	for _, z := range knownZones {
		items[z] = c.zone(z)
	}
	out, next, err := page(c, items, nil)
	return &compute.ZoneList{Kind: "compute#zoneList", Items: out, NextPageToken: next, SelfLink: c.p.link("zones")}, err
}

func getRegion(c *call) (any, error) { return c.region(c.where), nil }

func listRegions(c *call) (any, error) {
	items := map[string]*compute.Region{}
	for _, z := range knownZones {
		items[regionOf(z)] = c.region(regionOf(z))
	}
	out, next, err := page(c, items, nil)
	return &compute.RegionList{Kind: "compute#regionList", Items: out, NextPageToken: next, SelfLink: c.p.link("regions")}, err
}

func getProject(c *call) (any, error) {
	return &compute.Project{Kind: "compute#project", Name: c.p.name, Id: c.p.number, SelfLink: computeBase + "projects/" + c.p.name,
		DefaultServiceAccount: fmt.Sprintf("%d-compute@developer.gserviceaccount.com", c.p.number)}, nil
}

// getImageFromFamily answers images.getFromFamily: every family has one image, <family>-v20250101.
func getImageFromFamily(c *call) (any, error) {
	family := c.names[0]
	name := family + "-v20250101"
	return &compute.Image{Kind: "compute#image", Name: name, Family: family, Id: zoneID(name), Status: "READY", DiskSizeGb: 10,
		SelfLink: c.p.link("global", "images", name), ArchiveSizeBytes: 1 << 30}, nil
}

// computeRoutes are the Compute Engine methods served, by path after projects/{project}/.
var computeRoutes = []route{
	{"GET", []string{}, "compute.projects.get", getProject},
	{"GET", []string{"zones"}, "compute.zones.list", listZones},
	{"GET", []string{"zones", "*"}, "compute.zones.get", getZone},
	{"GET", []string{"regions"}, "compute.regions.list", listRegions},
	{"GET", []string{"regions", "*"}, "compute.regions.get", getRegion},
	{"GET", []string{"global", "images", "family", "*"}, "compute.images.getFromFamily", getImageFromFamily},

	{"GET", []string{"zones", "*", "operations", "*"}, "compute.zoneOperations.get", getOp(false)},
	{"POST", []string{"zones", "*", "operations", "*", "wait"}, "compute.zoneOperations.wait", getOp(true)},
	{"GET", []string{"regions", "*", "operations", "*"}, "compute.regionOperations.get", getOp(false)},
	{"POST", []string{"regions", "*", "operations", "*", "wait"}, "compute.regionOperations.wait", getOp(true)},
	{"GET", []string{"global", "operations", "*"}, "compute.globalOperations.get", getOp(false)},
	{"POST", []string{"global", "operations", "*", "wait"}, "compute.globalOperations.wait", getOp(true)},

	{"POST", []string{"zones", "*", "disks"}, "compute.disks.insert", insertDisk},
	{"GET", []string{"zones", "*", "disks"}, "compute.disks.list", listDisks},
	{"GET", []string{"aggregated", "disks"}, "compute.disks.aggregatedList", aggregatedDisks},
	{"GET", []string{"zones", "*", "disks", "*"}, "compute.disks.get", getDisk},
	{"DELETE", []string{"zones", "*", "disks", "*"}, "compute.disks.delete", deleteDisk},
	{"POST", []string{"zones", "*", "disks", "*", "setLabels"}, "compute.disks.setLabels", setDiskLabels},
	{"POST", []string{"zones", "*", "disks", "*", "resize"}, "compute.disks.resize", resizeDisk},

	{"GET", []string{"zones", "*", "instances"}, "compute.instances.list", listInstances},
	{"GET", []string{"aggregated", "instances"}, "compute.instances.aggregatedList", aggregatedInstances},
	{"GET", []string{"zones", "*", "instances", "*"}, "compute.instances.get", getInstance},
	{"DELETE", []string{"zones", "*", "instances", "*"}, "compute.instances.delete", deleteInstance},
	{"POST", []string{"zones", "*", "instances", "*", "attachDisk"}, "compute.instances.attachDisk", attachDisk},
	{"POST", []string{"zones", "*", "instances", "*", "detachDisk"}, "compute.instances.detachDisk", detachDisk},
	{"POST", []string{"zones", "*", "instances", "*", "setMetadata"}, "compute.instances.setMetadata", setMetadata},
	{"POST", []string{"zones", "*", "instances", "*", "setLabels"}, "compute.instances.setLabels", setInstanceLabels},

	{"POST", []string{"global", "networks"}, "compute.networks.insert", insertNetwork},
	{"GET", []string{"global", "networks"}, "compute.networks.list", listNetworks},
	{"GET", []string{"global", "networks", "*"}, "compute.networks.get", getNetwork},
	{"DELETE", []string{"global", "networks", "*"}, "compute.networks.delete", deleteNetwork},
	{"POST", []string{"regions", "*", "subnetworks"}, "compute.subnetworks.insert", insertSubnetwork},
	{"GET", []string{"regions", "*", "subnetworks"}, "compute.subnetworks.list", listSubnetworks},
	{"GET", []string{"regions", "*", "subnetworks", "*"}, "compute.subnetworks.get", getSubnetwork},
	{"DELETE", []string{"regions", "*", "subnetworks", "*"}, "compute.subnetworks.delete", deleteSubnetwork},
	{"POST", []string{"global", "firewalls"}, "compute.firewalls.insert", insertFirewall},
	{"GET", []string{"global", "firewalls"}, "compute.firewalls.list", listFirewalls},
	{"GET", []string{"global", "firewalls", "*"}, "compute.firewalls.get", getFirewall},
	{"PATCH", []string{"global", "firewalls", "*"}, "compute.firewalls.patch", patchFirewall},
	{"PUT", []string{"global", "firewalls", "*"}, "compute.firewalls.update", updateFirewall},
	{"DELETE", []string{"global", "firewalls", "*"}, "compute.firewalls.delete", deleteFirewall},
	{"POST", []string{"global", "routes"}, "compute.routes.insert", insertRoute},
	{"GET", []string{"global", "routes"}, "compute.routes.list", listRoutes},
	{"GET", []string{"global", "routes", "*"}, "compute.routes.get", getRoute},
	{"DELETE", []string{"global", "routes", "*"}, "compute.routes.delete", deleteRoute},

	{"POST", []string{"global", "instanceTemplates"}, "compute.instanceTemplates.insert", insertTemplate},
	{"GET", []string{"global", "instanceTemplates"}, "compute.instanceTemplates.list", listTemplates},
	{"GET", []string{"global", "instanceTemplates", "*"}, "compute.instanceTemplates.get", getTemplate},
	{"DELETE", []string{"global", "instanceTemplates", "*"}, "compute.instanceTemplates.delete", deleteTemplate},
	{"POST", []string{"zones", "*", "instanceGroupManagers"}, "compute.instanceGroupManagers.insert", insertGroup},
	{"GET", []string{"zones", "*", "instanceGroupManagers"}, "compute.instanceGroupManagers.list", listGroups},
	{"GET", []string{"zones", "*", "instanceGroupManagers", "*"}, "compute.instanceGroupManagers.get", getGroup},
	{"DELETE", []string{"zones", "*", "instanceGroupManagers", "*"}, "compute.instanceGroupManagers.delete", deleteGroup},
	{"PATCH", []string{"zones", "*", "instanceGroupManagers", "*"}, "compute.instanceGroupManagers.patch", patchGroup},
	{"POST", []string{"zones", "*", "instanceGroupManagers", "*", "resize"}, "compute.instanceGroupManagers.resize", resizeGroup},
	{"POST", []string{"zones", "*", "instanceGroupManagers", "*", "setInstanceTemplate"}, "compute.instanceGroupManagers.setInstanceTemplate", setGroupTemplate},
	{"POST", []string{"zones", "*", "instanceGroupManagers", "*", "listManagedInstances"}, "compute.instanceGroupManagers.listManagedInstances", listManagedInstances},
	{"POST", []string{"zones", "*", "instanceGroupManagers", "*", "recreateInstances"}, "compute.instanceGroupManagers.recreateInstances", recreateInstances},
}
