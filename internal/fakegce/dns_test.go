package fakegce

import (
	"context"
	"slices"
	"testing"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"
)

func TestCloudDNSThroughTheGoClient(t *testing.T) {
	fake, _, d, url := newClients(t)
	z := must[*dns.ManagedZone](t)(d.ManagedZones.Create(proj, &dns.ManagedZone{Name: "example", DnsName: "example.com.", Description: "x"}).Do())
	if z.Id == 0 || len(z.NameServers) == 0 {
		t.Fatalf("zone: %+v", z)
	}
	if _, err := d.ManagedZones.Create(proj, &dns.ManagedZone{Name: "example", DnsName: "example.com."}).Do(); err == nil {
		t.Fatal("a second zone of the name")
	} else if code, r := reason(err); code != 409 || r != "alreadyExists" {
		t.Fatalf("second zone: %v", err)
	}
	l := must[*dns.ManagedZonesListResponse](t)(d.ManagedZones.List(proj).DnsName("example.com.").Do())
	if len(l.ManagedZones) != 1 || l.ManagedZones[0].Name != "example" {
		t.Fatalf("zones by dnsName: %+v", l.ManagedZones)
	}
	a := &dns.ResourceRecordSet{Name: "api.c1.example.com.", Type: "A", Ttl: 60, Rrdatas: []string{"10.0.0.1"}}
	ch := must[*dns.Change](t)(d.Changes.Create(proj, "example", &dns.Change{Additions: []*dns.ResourceRecordSet{a,
		{Name: "etcd-a.c1.example.com.", Type: "A", Ttl: 60, Rrdatas: []string{"10.0.0.2"}}}}).Do())
	if ch.Status != "pending" {
		t.Fatalf("change: %+v", ch)
	}
	if ch = must[*dns.Change](t)(d.Changes.Get(proj, "example", ch.Id).Do()); ch.Status != "done" {
		t.Fatalf("change after a poll: %s", ch.Status)
	}
	// All or nothing: an existing addition fails the change and the deletion in it is not made.
	_, err := d.Changes.Create(proj, "example", &dns.Change{Deletions: []*dns.ResourceRecordSet{a}, Additions: []*dns.ResourceRecordSet{
		{Name: "api.c1.example.com.", Type: "A", Ttl: 60, Rrdatas: []string{"10.0.0.9"}}, {Name: "etcd-a.c1.example.com.", Type: "A", Ttl: 60, Rrdatas: []string{"1.1.1.1"}}}}).Do()
	if code, r := reason(err); code != 409 || r != "alreadyExists" {
		t.Fatalf("an addition of an existing record: %v", err)
	}
	_, err = d.Changes.Create(proj, "example", &dns.Change{Deletions: []*dns.ResourceRecordSet{{Name: a.Name, Type: "A", Ttl: 60, Rrdatas: []string{"10.9.9.9"}}}}).Do()
	if code, r := reason(err); code != 412 || r != "conditionNotMet" {
		t.Fatalf("a deletion that does not match: %v", err)
	}
	_, err = d.Changes.Create(proj, "example", &dns.Change{Deletions: []*dns.ResourceRecordSet{{Name: "nope.example.com.", Type: "A", Ttl: 60, Rrdatas: []string{"1.1.1.1"}}}}).Do()
	if code, r := reason(err); code != 404 || r != "notFound" {
		t.Fatalf("a deletion of nothing: %v", err)
	}
	var names []string
	err = d.ResourceRecordSets.List(proj, "example").MaxResults(1).Pages(context.Background(), func(r *dns.ResourceRecordSetsListResponse) error {
		for _, rr := range r.Rrsets {
			names = append(names, rr.Name+" "+rr.Type)
		}
		return nil
	})
	want := []string{"api.c1.example.com. A", "etcd-a.c1.example.com. A", "example.com. NS", "example.com. SOA"}
	if err != nil || !slices.Equal(names, want) {
		t.Fatalf("records: %v %v", names, err)
	}
	one := must[*dns.ResourceRecordSetsListResponse](t)(d.ResourceRecordSets.List(proj, "example").Name("api.c1.example.com.").Type("A").Do())
	if len(one.Rrsets) != 1 || one.Rrsets[0].Rrdatas[0] != "10.0.0.1" {
		t.Fatalf("by name and type: %+v", one.Rrsets)
	}
	must[*dns.Change](t)(d.Changes.Create(proj, "example", &dns.Change{Deletions: []*dns.ResourceRecordSet{a},
		Additions: []*dns.ResourceRecordSet{{Name: a.Name, Type: "A", Ttl: 60, Rrdatas: []string{"10.0.0.9"}}}}).Do())
	one = must[*dns.ResourceRecordSetsListResponse](t)(d.ResourceRecordSets.List(proj, "example").Name(a.Name).Type("A").Do())
	if one.Rrsets[0].Rrdatas[0] != "10.0.0.9" {
		t.Fatalf("after a replacement: %+v", one.Rrsets[0])
	}
	// The contract's endpoint, ADDRESS+"dns/v1/", reaches the same zones.
	d2, err := dns.NewService(context.Background(), option.WithEndpoint(url+"/dns/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	if l := must[*dns.ManagedZonesListResponse](t)(d2.ManagedZones.List(proj).Do()); len(l.ManagedZones) != 1 {
		t.Fatalf("zones through ADDRESS/dns/v1/: %+v", l.ManagedZones)
	}
	if c := fake.Calls(); c["dns.changes.create"] != 5 || !Mutating("dns.changes.create") || Mutating("dns.resourceRecordSets.list") {
		t.Fatalf("calls: %v", c)
	}
}
