package fakeaws

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/google/go-cmp/cmp"
)

func newRoute53(t *testing.T) (*Server, *route53.Client) {
	t.Helper()
	s, srv := startFakeAWS(t)
	return s, route53.NewFromConfig(testAWSConfig(srv.URL))
}

func createZone(t *testing.T, c *route53.Client, name, ref string) *route53.CreateHostedZoneOutput {
	t.Helper()
	out, err := c.CreateHostedZone(context.Background(), &route53.CreateHostedZoneInput{Name: aws.String(name), CallerReference: aws.String(ref)})
	if err != nil {
		t.Fatalf("CreateHostedZone(%s): %v", name, err)
	}
	return out
}

func rrset(name string, typ types.RRType, ttl int64, values ...string) *types.ResourceRecordSet {
	rs := &types.ResourceRecordSet{Name: aws.String(name), Type: typ, TTL: aws.Int64(ttl)}
	for _, v := range values {
		rs.ResourceRecords = append(rs.ResourceRecords, types.ResourceRecord{Value: aws.String(v)})
	}
	return rs
}

func change(action types.ChangeAction, rs *types.ResourceRecordSet) types.Change {
	return types.Change{Action: action, ResourceRecordSet: rs}
}

func changeRecords(ctx context.Context, c *route53.Client, zone string, changes ...types.Change) (*route53.ChangeResourceRecordSetsOutput, error) {
	return c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(zone), ChangeBatch: &types.ChangeBatch{Changes: changes}})
}

// listRecords lists a zone's records page by page (pageSize per page) as "name type ttl values...".
func listRecords(t *testing.T, c *route53.Client, zone string, pageSize int32) []string {
	t.Helper()
	var got []string
	in := &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone), MaxItems: aws.Int32(pageSize)}
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("ListResourceRecordSets never ends")
		}
		out, err := c.ListResourceRecordSets(context.Background(), in)
		if err != nil {
			t.Fatalf("ListResourceRecordSets: %v", err)
		}
		if len(out.ResourceRecordSets) > int(pageSize) {
			t.Fatalf("a page of %d records, asked for %d", len(out.ResourceRecordSets), pageSize)
		}
		for _, rs := range out.ResourceRecordSets {
			line := aws.ToString(rs.Name) + " " + string(rs.Type)
			if rs.Type == types.RRTypeSoa || rs.Type == types.RRTypeNs {
				got = append(got, line)
				continue
			}
			for _, rr := range rs.ResourceRecords {
				line += " " + aws.ToString(rr.Value)
			}
			got = append(got, line)
		}
		if !out.IsTruncated {
			return got
		}
		in.StartRecordName, in.StartRecordType, in.StartRecordIdentifier = out.NextRecordName, out.NextRecordType, out.NextRecordIdentifier
	}
}

func TestRoute53HostedZones(t *testing.T) {
	ctx := context.Background()
	s, srv := startFakeAWS(t)
	c := route53.NewFromConfig(testAWSConfig(srv.URL))

	out := createZone(t, c, "Example.COM", "ref-1")
	id := aws.ToString(out.HostedZone.Id)
	if !strings.HasPrefix(id, "/hostedzone/Z") || aws.ToString(out.HostedZone.Name) != "example.com." {
		t.Errorf("created zone %s named %s; want /hostedzone/Z... named example.com.", id, aws.ToString(out.HostedZone.Name))
	}
	if want := "https://route53.amazonaws.com/2013-04-01" + id; aws.ToString(out.Location) != want {
		t.Errorf("Location %q, want %q", aws.ToString(out.Location), want)
	}
	if out.ChangeInfo == nil || out.ChangeInfo.Status != types.ChangeStatusPending || !strings.HasPrefix(aws.ToString(out.ChangeInfo.Id), "/change/C") {
		t.Errorf("change info %+v; want a PENDING /change/C...", out.ChangeInfo)
	}
	if out.DelegationSet == nil || len(out.DelegationSet.NameServers) != 4 {
		t.Errorf("delegation set %+v; want 4 name servers", out.DelegationSet)
	}

	_, err := c.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("other.com"), CallerReference: aws.String("ref-1")})
	var exists *types.HostedZoneAlreadyExists
	if !errors.As(err, &exists) {
		t.Errorf("CreateHostedZone with a used caller reference: %v; want HostedZoneAlreadyExists", err)
	}
	second := aws.ToString(createZone(t, c, "example.com.", "ref-2").HostedZone.Id) // Route53 allows two zones of one name
	createZone(t, c, "a.example.com", "ref-3")
	createZone(t, c, "example.org", "ref-4")

	got, err := c.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(id)})
	if err != nil {
		t.Fatalf("GetHostedZone: %v", err)
	}
	if aws.ToInt64(got.HostedZone.ResourceRecordSetCount) != 2 || got.DelegationSet == nil {
		t.Errorf("GetHostedZone: %d records, delegation set %v; want 2 (SOA and NS) and one", aws.ToInt64(got.HostedZone.ResourceRecordSetCount), got.DelegationSet)
	}
	// Without "/hostedzone/" too.
	if _, err := c.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(strings.TrimPrefix(id, "/hostedzone/"))}); err != nil {
		t.Errorf("GetHostedZone by the bare id: %v", err)
	}

	byName, err := c.ListHostedZonesByName(ctx, &route53.ListHostedZonesByNameInput{DNSName: aws.String("example.com"), MaxItems: aws.Int32(2)})
	if err != nil {
		t.Fatalf("ListHostedZonesByName: %v", err)
	}
	var names []string
	for _, z := range byName.HostedZones {
		names = append(names, aws.ToString(z.Name)+" "+aws.ToString(z.Id))
	}
	if diff := cmp.Diff([]string{"example.com. " + id, "example.com. " + second}, names); diff != "" || !byName.IsTruncated ||
		aws.ToString(byName.NextDNSName) != "a.example.com." {
		t.Errorf("ListHostedZonesByName(example.com, 2) (-want +got):\n%s truncated %v next %s", diff, byName.IsTruncated, aws.ToString(byName.NextDNSName))
	}
	rest, err := c.ListHostedZonesByName(ctx, &route53.ListHostedZonesByNameInput{DNSName: byName.NextDNSName, HostedZoneId: byName.NextHostedZoneId})
	if err != nil {
		t.Fatalf("ListHostedZonesByName, next: %v", err)
	}
	names = nil
	for _, z := range rest.HostedZones {
		names = append(names, aws.ToString(z.Name))
	}
	if diff := cmp.Diff([]string{"a.example.com.", "example.org."}, names); diff != "" || rest.IsTruncated {
		t.Errorf("ListHostedZonesByName, next page (-want +got):\n%s truncated %v", diff, rest.IsTruncated)
	}

	var all []string
	for pages := route53.NewListHostedZonesPaginator(c, &route53.ListHostedZonesInput{MaxItems: aws.Int32(3)}); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListHostedZones: %v", err)
		}
		for _, z := range page.HostedZones {
			all = append(all, aws.ToString(z.Name))
		}
	}
	if diff := cmp.Diff([]string{"example.com.", "example.com.", "a.example.com.", "example.org."}, all); diff != "" {
		t.Errorf("ListHostedZones (-want +got):\n%s", diff)
	}

	if _, err := changeRecords(ctx, c, id, change(types.ChangeActionCreate, rrset("www.example.com", types.RRTypeA, 60, "192.0.2.1"))); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteHostedZone(ctx, &route53.DeleteHostedZoneInput{Id: aws.String(id)})
	var notEmpty *types.HostedZoneNotEmpty
	if !errors.As(err, &notEmpty) {
		t.Errorf("DeleteHostedZone of a zone with a record: %v; want HostedZoneNotEmpty", err)
	}
	if _, err := changeRecords(ctx, c, id, change(types.ChangeActionDelete, rrset("www.example.com.", types.RRTypeA, 60, "192.0.2.1"))); err != nil {
		t.Fatal(err)
	}
	del, err := c.DeleteHostedZone(ctx, &route53.DeleteHostedZoneInput{Id: aws.String(id)})
	if err != nil || del.ChangeInfo == nil {
		t.Fatalf("DeleteHostedZone of an empty zone: %v", err)
	}
	_, err = c.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(id)})
	var noZone *types.NoSuchHostedZone
	if !errors.As(err, &noZone) {
		t.Errorf("GetHostedZone of a deleted zone: %v; want NoSuchHostedZone", err)
	}
	// The caller reference of a deleted zone stays used, as in Route53.
	if _, err := c.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("example.com"), CallerReference: aws.String("ref-1")}); !errors.As(err, &exists) {
		t.Errorf("CreateHostedZone with the caller reference of a deleted zone: %v; want HostedZoneAlreadyExists", err)
	}
	// A request that is no operation is counted under Route53 and its method.
	resp, err := http.Post(srv.URL+"/2013-04-01/nothing", "text/xml", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /2013-04-01/nothing: %d, want 404", resp.StatusCode)
	}

	calls := s.Calls()
	for op, want := range map[string]int{"CreateHostedZone": 6, "GetHostedZone": 3, "ListHostedZonesByName": 2, "ListHostedZones": 2,
		"ChangeResourceRecordSets": 2, "DeleteHostedZone": 2, "Route53POST": 1} {
		if calls[op] != want {
			t.Errorf("%d %s calls counted, want %d (all: %v)", calls[op], op, want, calls)
		}
	}
}

func TestRoute53Records(t *testing.T) {
	ctx := context.Background()
	_, c := newRoute53(t)
	zone := aws.ToString(createZone(t, c, "example.com", "r").HostedZone.Id)

	if _, err := changeRecords(ctx, c, zone,
		change(types.ChangeActionUpsert, rrset("API.example.com", types.RRTypeA, 60, "192.0.2.2", "192.0.2.1")),
		change(types.ChangeActionUpsert, rrset("api.example.com", types.RRTypeTxt, 60, `"owner=a"`)),
		change(types.ChangeActionCreate, rrset("api.internal.example.com", types.RRTypeAaaa, 60, "2001:db8::1")),
		change(types.ChangeActionCreate, rrset("*.apps.example.com", types.RRTypeCname, 300, "lb.example.net")),
		change(types.ChangeActionCreate, rrset("b.example.com", types.RRTypeA, 60, "192.0.2.9")),
	); err != nil {
		t.Fatalf("ChangeResourceRecordSets: %v", err)
	}
	want := []string{
		"example.com. NS",
		"example.com. SOA",
		"api.example.com. A 192.0.2.2 192.0.2.1",
		`api.example.com. TXT "owner=a"`,
		`\052.apps.example.com. CNAME lb.example.net`, // com.example.apps.*
		"b.example.com. A 192.0.2.9",
		"api.internal.example.com. AAAA 2001:db8::1", // com.example.internal.api
	}
	for _, size := range []int32{1, 2, 3, 300} {
		if diff := cmp.Diff(want, listRecords(t, c, zone, size)); diff != "" {
			t.Errorf("records, pages of %d (-want +got):\n%s", size, diff)
		}
	}

	// The SDK's paginator follows NextRecordName, NextRecordType and NextRecordIdentifier.
	var names []string
	for pages := route53.NewListResourceRecordSetsPaginator(c, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone), MaxItems: aws.Int32(2)}); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListResourceRecordSets paginator: %v", err)
		}
		for _, rs := range page.ResourceRecordSets {
			names = append(names, aws.ToString(rs.Name)+" "+string(rs.Type))
		}
	}
	if len(names) != len(want) {
		t.Errorf("the SDK's paginator listed %v; want %d record sets", names, len(want))
	}

	// Start at a name and type.
	page, err := c.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone),
		StartRecordName: aws.String("api.example.com"), StartRecordType: types.RRTypeTxt, MaxItems: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.ResourceRecordSets) != 1 || page.ResourceRecordSets[0].Type != types.RRTypeTxt || !page.IsTruncated ||
		aws.ToString(page.NextRecordName) != `\052.apps.example.com.` || page.NextRecordType != types.RRTypeCname {
		t.Errorf("from api.example.com TXT: %+v truncated %v next %s %s", page.ResourceRecordSets, page.IsTruncated,
			aws.ToString(page.NextRecordName), page.NextRecordType)
	}

	// All or nothing: one bad change leaves the zone as it was, and the error says why.
	for _, tc := range []struct {
		name    string
		changes []types.Change
		reason  string
	}{
		{"create existing", []types.Change{
			change(types.ChangeActionCreate, rrset("new.example.com", types.RRTypeA, 60, "192.0.2.5")),
			change(types.ChangeActionCreate, rrset("b.example.com", types.RRTypeA, 60, "192.0.2.9")),
		}, "Tried to create resource record set [name='b.example.com.', type='A'] but it already exists"},
		{"delete absent", []types.Change{
			change(types.ChangeActionUpsert, rrset("new.example.com", types.RRTypeA, 60, "192.0.2.5")),
			change(types.ChangeActionDelete, rrset("c.example.com", types.RRTypeA, 60, "192.0.2.9")),
		}, "Tried to delete resource record set [name='c.example.com.', type='A'] but it was not found"},
		{"delete other values", []types.Change{
			change(types.ChangeActionDelete, rrset("b.example.com", types.RRTypeA, 60, "192.0.2.10")),
		}, "Tried to delete resource record set [name='b.example.com.', type='A'] but the values provided do not match the current values"},
		{"delete other TTL", []types.Change{
			change(types.ChangeActionDelete, rrset("b.example.com", types.RRTypeA, 30, "192.0.2.9")),
		}, "but the values provided do not match the current values"},
		{"out of zone", []types.Change{
			change(types.ChangeActionUpsert, rrset("api.example.org", types.RRTypeA, 60, "192.0.2.5")),
		}, "RRSet with DNS name api.example.org. is not permitted in zone example.com."},
		{"unquoted TXT", []types.Change{
			change(types.ChangeActionUpsert, rrset("new.example.com", types.RRTypeTxt, 60, "bare")),
		}, "Value should be enclosed in quotation marks"},
		{"not an IPv4 address", []types.Change{
			change(types.ChangeActionUpsert, rrset("new.example.com", types.RRTypeA, 60, "2001:db8::1")),
		}, "Value is not a valid IPv4 address"},
		{"CNAME beside A", []types.Change{
			change(types.ChangeActionUpsert, rrset("b.example.com", types.RRTypeCname, 60, "x.example.net")),
		}, "RRSet of type CNAME with DNS name b.example.com. is not permitted because a conflicting RRSet of type A"},
		{"apex SOA", []types.Change{
			change(types.ChangeActionCreate, rrset("example.com", types.RRTypeSoa, 60, "ns. host. 1 2 3 4 5")),
		}, "Tried to create resource record set [name='example.com.', type='SOA'] but it already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := changeRecords(ctx, c, zone, tc.changes...)
			var bad *types.InvalidChangeBatch
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("ChangeResourceRecordSets: %v; want InvalidChangeBatch saying %q", err, tc.reason)
			}
			if diff := cmp.Diff(want, listRecords(t, c, zone, 300)); diff != "" {
				t.Errorf("a failed batch changed the zone (-want +got):\n%s", diff)
			}
		})
	}

	// A record set without TTL is invalid input; so is a type Route53 does not have.
	_, err = changeRecords(ctx, c, zone, change(types.ChangeActionUpsert, &types.ResourceRecordSet{Name: aws.String("x.example.com"), Type: types.RRTypeA,
		ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}}}))
	var invalid *types.InvalidInput
	if !errors.As(err, &invalid) {
		t.Errorf("a record set without TTL: %v; want InvalidInput", err)
	}

	// DELETE matches the values in any order; DELETE then CREATE in one batch replaces.
	if _, err := changeRecords(ctx, c, zone,
		change(types.ChangeActionDelete, rrset("api.example.com", types.RRTypeA, 60, "192.0.2.1", "192.0.2.2")),
		change(types.ChangeActionCreate, rrset("api.example.com", types.RRTypeA, 60, "192.0.2.3")),
		change(types.ChangeActionDelete, rrset("b.example.com", types.RRTypeA, 60, "192.0.2.9")),
	); err != nil {
		t.Fatalf("DELETE and CREATE: %v", err)
	}
	want = []string{
		"example.com. NS",
		"example.com. SOA",
		"api.example.com. A 192.0.2.3",
		`api.example.com. TXT "owner=a"`,
		`\052.apps.example.com. CNAME lb.example.net`,
		"api.internal.example.com. AAAA 2001:db8::1",
	}
	if diff := cmp.Diff(want, listRecords(t, c, zone, 300)); diff != "" {
		t.Errorf("after DELETE and CREATE (-want +got):\n%s", diff)
	}
}

func TestRoute53GetChange(t *testing.T) {
	ctx := context.Background()
	s, c := newRoute53(t)
	zone := aws.ToString(createZone(t, c, "example.com", "r").HostedZone.Id)
	for _, polls := range []int{0, 1, 3} {
		s.SetChangePendingPolls(polls)
		out, err := changeRecords(ctx, c, zone, change(types.ChangeActionUpsert, rrset("a.example.com", types.RRTypeA, 60, "192.0.2.1")))
		if err != nil {
			t.Fatal(err)
		}
		if out.ChangeInfo.Status != types.ChangeStatusPending {
			t.Errorf("the change's answer says %s, want PENDING", out.ChangeInfo.Status)
		}
		var got []types.ChangeStatus
		for range polls + 2 {
			ch, err := c.GetChange(ctx, &route53.GetChangeInput{Id: out.ChangeInfo.Id})
			if err != nil {
				t.Fatalf("GetChange: %v", err)
			}
			got = append(got, ch.ChangeInfo.Status)
		}
		var want []types.ChangeStatus
		for range polls {
			want = append(want, types.ChangeStatusPending)
		}
		want = append(want, types.ChangeStatusInsync, types.ChangeStatusInsync)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetChange with %d pending polls (-want +got):\n%s", polls, diff)
		}
	}
	_, err := c.GetChange(ctx, &route53.GetChangeInput{Id: aws.String("/change/CNOSUCH")})
	var noChange *types.NoSuchChange
	if !errors.As(err, &noChange) {
		t.Errorf("GetChange of no change: %v; want NoSuchChange", err)
	}
}
