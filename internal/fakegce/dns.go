package fakegce

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	dns "google.golang.org/api/dns/v1"
)

// dnsZone is a Cloud DNS managed zone, its record sets (by "name type") and its changes.
type dnsZone struct {
	zone    *dns.ManagedZone
	records map[string]*dns.ResourceRecordSet
	changes []*dnsChange
}

type dnsChange struct {
	change *dns.Change
	polls  int
	slow   int
}

// answer is the change as a changes.get sees it now: pending until its first poll (more when slowed), then done.
func (c *dnsChange) answer() *dns.Change {
	ch := *c.change
	ch.Status = "done"
	if c.polls <= c.slow {
		ch.Status = "pending"
	}
	return &ch
}

func rrKey(name, typ string) string { return name + " " + typ }

// canonicalName is a DNS name as Cloud DNS keeps it: lower case, with the final dot.
func canonicalName(n string) string {
	n = strings.ToLower(n)
	if !strings.HasSuffix(n, ".") {
		n += "."
	}
	return n
}

// inZone reports whether name is the zone's name or under it.
func inZone(name, zone string) bool {
	return name == zone || strings.HasSuffix(name, "."+zone)
}

func createZone(c *call) (any, error) {
	var z dns.ManagedZone
	if err := c.decode(&z); err != nil {
		return nil, err
	}
	if err := checkName("entity.managedZone.name", z.Name); err != nil {
		return nil, err
	}
	if _, ok := c.p.zones[z.Name]; ok {
		return nil, errorf(http.StatusConflict, "alreadyExists", "The resource 'entity.managedZone' named '%s' already exists", z.Name)
	}
	if z.DnsName == "" || !strings.HasSuffix(z.DnsName, ".") {
		return nil, invalid("Invalid value for 'entity.managedZone.dnsName': '%s'", z.DnsName)
	}
	z.DnsName = canonicalName(z.DnsName)
	z.Kind, z.Id, z.CreationTime = "dns#managedZone", c.s.newID(), time.Now().UTC().Format(time.RFC3339Nano)
	if z.Visibility == "" {
		z.Visibility = "public"
	}
	z.NameServers = []string{"ns-cloud-a1.googledomains.com.", "ns-cloud-a2.googledomains.com.", "ns-cloud-a3.googledomains.com.", "ns-cloud-a4.googledomains.com."}
	dz := &dnsZone{zone: &z, records: map[string]*dns.ResourceRecordSet{}}
	dz.records[rrKey(z.DnsName, "NS")] = &dns.ResourceRecordSet{Kind: "dns#resourceRecordSet", Name: z.DnsName, Type: "NS", Ttl: 21600,
		Rrdatas: z.NameServers}
	dz.records[rrKey(z.DnsName, "SOA")] = &dns.ResourceRecordSet{Kind: "dns#resourceRecordSet", Name: z.DnsName, Type: "SOA", Ttl: 21600,
		Rrdatas: []string{"ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"}}
	c.p.zones[z.Name] = dz
	return &z, nil
}

// dnsZoneOf finds a zone by name or id.
func (c *call) dnsZoneOf(nameOrID string) (*dnsZone, error) {
	if z, ok := c.p.zones[nameOrID]; ok {
		return z, nil
	}
	for _, z := range c.p.zones {
		if strconv.FormatUint(z.zone.Id, 10) == nameOrID {
			return z, nil
		}
	}
	return nil, errorf(http.StatusNotFound, "notFound", "The 'parameters.managedZone' resource named '%s' does not exist.", nameOrID)
}

func getZoneDNS(c *call) (any, error) {
	z, err := c.dnsZoneOf(c.names[0])
	if err != nil {
		return nil, err
	}
	return z.zone, nil
}

func listZonesDNS(c *call) (any, error) {
	want := c.query.Get("dnsName")
	items := map[string]*dns.ManagedZone{}
	for n, z := range c.p.zones {
		if want == "" || z.zone.DnsName == canonicalName(want) {
			items[n] = z.zone
		}
	}
	out, next, err := page(c, items, nil)
	return &dns.ManagedZonesListResponse{Kind: "dns#managedZonesListResponse", ManagedZones: out, NextPageToken: next}, err
}

func deleteZoneDNS(c *call) (any, error) {
	z, err := c.dnsZoneOf(c.names[0])
	if err != nil {
		return nil, err
	}
	for _, r := range z.records {
		if !(r.Name == z.zone.DnsName && (r.Type == "NS" || r.Type == "SOA")) {
			return nil, errorf(http.StatusBadRequest, "containerNotEmpty",
				"The resource named '%s' cannot be deleted because it is not empty", z.zone.Name)
		}
	}
	delete(c.p.zones, z.zone.Name)
	return struct{}{}, nil
}

func listRecords(c *call) (any, error) {
	z, err := c.dnsZoneOf(c.names[0])
	if err != nil {
		return nil, err
	}
	name, typ := c.query.Get("name"), c.query.Get("type")
	if typ != "" && name == "" {
		return nil, invalid("Invalid value for 'parameters.type': the name must be given with the type")
	}
	items := map[string]*dns.ResourceRecordSet{}
	for k, r := range z.records {
		if (name == "" || r.Name == canonicalName(name)) && (typ == "" || r.Type == typ) {
			items[k] = r
		}
	}
	out, next, err := page(c, items, nil)
	return &dns.ResourceRecordSetsListResponse{Kind: "dns#resourceRecordSetsListResponse", Rrsets: out, NextPageToken: next}, err
}

func createChange(c *call) (any, error) {
	z, err := c.dnsZoneOf(c.names[0])
	if err != nil {
		return nil, err
	}
	var ch dns.Change
	if err := c.decode(&ch); err != nil {
		return nil, err
	}
	if len(ch.Additions) == 0 && len(ch.Deletions) == 0 {
		return nil, errorf(http.StatusBadRequest, "required", "Required field 'entity.change' not specified: the change has neither additions nor deletions")
	}
	records := map[string]*dns.ResourceRecordSet{}
	for k, r := range z.records {
		records[k] = r
	}
	for i, d := range ch.Deletions {
		d.Name = canonicalName(d.Name)
		k := rrKey(d.Name, d.Type)
		old, ok := records[k]
		if !ok {
			return nil, errorf(http.StatusNotFound, "notFound",
				"The 'entity.change.deletions[%d]' resource named '%s (%s)' does not exist.", i, d.Name, d.Type)
		}
		if old.Ttl != d.Ttl || !slices.Equal(old.Rrdatas, d.Rrdatas) {
			return nil, errorf(http.StatusPreconditionFailed, "conditionNotMet",
				"Precondition not met for 'entity.change.deletions[%d]'", i)
		}
		delete(records, k)
	}
	for i, a := range ch.Additions {
		a.Name = canonicalName(a.Name)
		if !inZone(a.Name, z.zone.DnsName) {
			return nil, errorf(http.StatusBadRequest, "invalid",
				"The resource 'entity.change.additions[%d]' named '%s (%s)' is not in the zone '%s'.", i, a.Name, a.Type, z.zone.DnsName)
		}
		if a.Type == "" || len(a.Rrdatas) == 0 {
			return nil, errorf(http.StatusBadRequest, "invalid", "Invalid value for 'entity.change.additions[%d]': a type and rrdatas are required", i)
		}
		if a.Type == "CNAME" && len(a.Rrdatas) > 1 {
			return nil, errorf(http.StatusBadRequest, "invalid", "Invalid value for 'entity.change.additions[%d].rrdata': a CNAME has one value", i)
		}
		k := rrKey(a.Name, a.Type)
		if _, ok := records[k]; ok {
			return nil, errorf(http.StatusConflict, "alreadyExists",
				"The resource 'entity.change.additions[%d]' named '%s (%s)' already exists", i, a.Name, a.Type)
		}
		r := *a
		r.Kind = "dns#resourceRecordSet"
		records[k] = &r
	}
	z.records = records
	ch.Kind, ch.Id, ch.StartTime = "dns#change", strconv.Itoa(len(z.changes)+1), time.Now().UTC().Format(time.RFC3339Nano)
	dc := &dnsChange{change: &ch, slow: c.s.faults.SlowOperations}
	z.changes = append(z.changes, dc)
	a := dc.answer()
	a.Status = "pending"
	return a, nil
}

func getChange(c *call) (any, error) {
	z, err := c.dnsZoneOf(c.names[0])
	if err != nil {
		return nil, err
	}
	for _, ch := range z.changes {
		if ch.change.Id == c.names[1] {
			ch.polls++
			return ch.answer(), nil
		}
	}
	return nil, errorf(http.StatusNotFound, "notFound", "The 'parameters.changeId' resource named '%s' does not exist.", c.names[1])
}

func listChanges(c *call) (any, error) {
	z, err := c.dnsZoneOf(c.names[0])
	if err != nil {
		return nil, err
	}
	items := map[string]*dns.Change{}
	for _, ch := range z.changes {
		items[fmt.Sprintf("%012s", ch.change.Id)] = ch.answer()
	}
	out, next, err := page(c, items, nil)
	return &dns.ChangesListResponse{Kind: "dns#changesListResponse", Changes: out, NextPageToken: next}, err
}

// dnsRoutes are the Cloud DNS methods served, by path after projects/{project}/.
var dnsRoutes = []route{
	{"POST", []string{"managedZones"}, "dns.managedZones.create", createZone},
	{"GET", []string{"managedZones"}, "dns.managedZones.list", listZonesDNS},
	{"GET", []string{"managedZones", "*"}, "dns.managedZones.get", getZoneDNS},
	{"DELETE", []string{"managedZones", "*"}, "dns.managedZones.delete", deleteZoneDNS},
	{"GET", []string{"managedZones", "*", "rrsets"}, "dns.resourceRecordSets.list", listRecords},
	{"POST", []string{"managedZones", "*", "changes"}, "dns.changes.create", createChange},
	{"GET", []string{"managedZones", "*", "changes"}, "dns.changes.list", listChanges},
	{"GET", []string{"managedZones", "*", "changes", "*"}, "dns.changes.get", getChange},
}
