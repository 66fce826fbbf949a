package awstasks

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/tasks/dnstasks"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

// startFake serves a new fake AWS and returns it with an SDK configuration for it that tries each call once, so
// that the tests see the fake's answers as they are.
func startFake(t *testing.T) (*fakeaws.Server, aws.Config) {
	t.Helper()
	s := fakeaws.New()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption},
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(hs.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", ""),
		RetryMaxAttempts: 1,
	}
}

// newTestRoute53 returns a Route53 client of a new fake with the hosted zones zones, and the provider of the
// first, with short waits.
func newTestRoute53(t *testing.T, zones ...string) (*fakeaws.Server, *route53.Client, *Route53) {
	t.Helper()
	s, cfg := startFake(t)
	c := route53.NewFromConfig(cfg)
	for i, z := range zones {
		_, err := c.CreateHostedZone(context.Background(), &route53.CreateHostedZoneInput{
			Name: aws.String(z), CallerReference: aws.String(fmt.Sprintf("ref-%d", i))})
		if err != nil {
			t.Fatalf("CreateHostedZone(%s): %v", z, err)
		}
	}
	s.ResetCalls()
	r := NewRoute53(c, zones[0])
	r.pollFirst, r.pollMax = time.Millisecond, 5*time.Millisecond
	return s, c, r
}

// zoneID finds a hosted zone's id with the SDK.
func zoneID(t *testing.T, c *route53.Client, zone string) string {
	t.Helper()
	out, err := c.ListHostedZonesByName(context.Background(), &route53.ListHostedZonesByNameInput{DNSName: aws.String(zone)})
	if err != nil || len(out.HostedZones) == 0 {
		t.Fatalf("ListHostedZonesByName(%s): %v", zone, err)
	}
	return aws.ToString(out.HostedZones[0].Id)
}

// wireRecords lists the zone as Route53 answers, "name type ttl value..." per record set, SOA and NS left out.
func wireRecords(t *testing.T, c *route53.Client, zone string) []string {
	t.Helper()
	var got []string
	p := route53.NewListResourceRecordSetsPaginator(c, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zoneID(t, c, zone))})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("ListResourceRecordSets: %v", err)
		}
		for _, rs := range out.ResourceRecordSets {
			if rs.Type == types.RRTypeSoa || rs.Type == types.RRTypeNs {
				continue
			}
			line := fmt.Sprintf("%s %s %d", aws.ToString(rs.Name), rs.Type, aws.ToInt64(rs.TTL))
			for _, rr := range rs.ResourceRecords {
				line += " " + aws.ToString(rr.Value)
			}
			got = append(got, line)
		}
	}
	return got
}

// wireChange changes the zone behind the provider's back.
func wireChange(t *testing.T, c *route53.Client, zone string, action types.ChangeAction, name string, rrtype types.RRType, values ...string) {
	t.Helper()
	rs := &types.ResourceRecordSet{Name: aws.String(name), Type: rrtype, TTL: aws.Int64(300)}
	for _, v := range values {
		rs.ResourceRecords = append(rs.ResourceRecords, types.ResourceRecord{Value: aws.String(v)})
	}
	_, err := c.ChangeResourceRecordSets(context.Background(), &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(zoneID(t, c, zone)),
		ChangeBatch:  &types.ChangeBatch{Changes: []types.Change{{Action: action, ResourceRecordSet: rs}}},
	})
	if err != nil {
		t.Fatalf("ChangeResourceRecordSets %s %s %s: %v", action, name, rrtype, err)
	}
}

func TestRoute53HostedZone(t *testing.T) {
	ctx := context.Background()
	t.Run("no zone of that name", func(t *testing.T) {
		_, c, _ := newTestRoute53(t, "other.com", "sub.example.com")
		r := NewRoute53(c, "example.com")
		_, err := r.List(ctx)
		if err == nil || !strings.Contains(err.Error(), "no hosted zone example.com") || engine.ClassOf(err) != engine.ClassTerminal {
			t.Fatalf("List = %v, want a terminal error naming example.com", err)
		}
	})
	t.Run("two public zones of that name", func(t *testing.T) {
		_, _, r := newTestRoute53(t, "example.com", "example.com")
		_, err := r.Get(ctx, "api.example.com", "A")
		if err == nil || !strings.Contains(err.Error(), "2 public hosted zones named example.com") || engine.ClassOf(err) != engine.ClassTerminal {
			t.Fatalf("Get = %v, want a terminal error naming the two zones", err)
		}
	})
	t.Run("private zones are not it", func(t *testing.T) {
		_, c, _ := newTestRoute53(t, "other.com")
		_, err := c.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{
			Name: aws.String("example.com"), CallerReference: aws.String("private"),
			HostedZoneConfig: &types.HostedZoneConfig{PrivateZone: true},
			VPC:              &types.VPC{VPCId: aws.String("vpc-1"), VPCRegion: types.VPCRegionUsEast1},
		})
		if err != nil {
			t.Fatalf("CreateHostedZone of a private zone: %v", err)
		}
		_, err = NewRoute53(c, "example.com").List(ctx)
		if err == nil || !strings.Contains(err.Error(), "no public hosted zone example.com") {
			t.Fatalf("List = %v, want an error saying there is only a private zone", err)
		}
	})
	t.Run("found once, among zones of other names", func(t *testing.T) {
		s, _, r := newTestRoute53(t, "example.com", "sub.example.com", "a.com", "example.org")
		for range 3 {
			r.NewRun()
			if _, err := r.List(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.Calls()["ListHostedZonesByName"]; got != 1 {
			t.Errorf("ListHostedZonesByName called %d times, want 1", got)
		}
	})
}

func TestRoute53BatchesConcurrentUpserts(t *testing.T) {
	ctx := context.Background()
	s, c, r := newTestRoute53(t, "example.com")
	s.SetChangePendingPolls(2)
	const n = 12
	r.batchWindow, r.batchMax = time.Hour, n // sent once every change is in: the test does not depend on speed
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("m%02d.etcd.example.com", i)
			if _, err := r.Get(ctx, name, "A"); err != nil {
				errs[i] = err
				return
			}
			errs[i] = r.Upsert(ctx, dnstasks.RecordSet{Name: name, Type: "A", TTL: 60, Values: []string{fmt.Sprintf("10.0.0.%d", i+1)}})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	calls := s.Calls()
	want := map[string]int{"ListHostedZonesByName": 1, "ListResourceRecordSets": 1, "ChangeResourceRecordSets": 1, "GetChange": 3}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got := wireRecords(t, c, "example.com"); len(got) != n || got[0] != "m00.etcd.example.com. A 60 10.0.0.1" {
		t.Errorf("Route53 holds %q, want %d A records", got, n)
	}
	// The cache follows the changes: the run reads them without listing again.
	s.ResetCalls()
	rs, err := r.Get(ctx, "m03.etcd.example.com", "A")
	if err != nil || rs == nil || rs.Values[0] != "10.0.0.4" {
		t.Fatalf("Get = %v, %v, want the upserted record", rs, err)
	}
	if got := s.Calls(); len(got) != 0 {
		t.Errorf("Get after the upserts called %v, want nothing", got)
	}
	// A new run lists once again, however many ask.
	r.NewRun()
	for range 3 {
		wg.Go(func() {
			if _, err := r.List(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(map[string]int{"ListResourceRecordSets": 1}, s.Calls()); diff != "" {
		t.Errorf("calls of a new run (-want +got):\n%s", diff)
	}
}

func TestRoute53CanonicalForms(t *testing.T) {
	ctx := context.Background()
	_, c, r := newTestRoute53(t, "Example.COM.")
	long := strings.Repeat("x", 300) + `"quoted" and \ back`
	sets := []dnstasks.RecordSet{
		{Name: "*.apps.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1", "10.0.0.2"}},
		{Name: "api.example.com", Type: "AAAA", TTL: 300, Values: []string{"fd00::1"}},
		{Name: "example.com", Type: "TXT", TTL: 60, Values: []string{"v=spf1 -all", long}},
		{Name: "www.example.com", Type: "CNAME", TTL: 60, Values: []string{"api.example.com"}},
	}
	for _, rs := range sets {
		if err := r.Upsert(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	wire := strings.Join(wireRecords(t, c, "example.com"), "\n")
	for _, want := range []string{`\052.apps.example.com. A 60 10.0.0.1 10.0.0.2`, `example.com. TXT 60 "v=spf1 -all"`, `\"quoted\" and \\ back"`, `"` + strings.Repeat("x", 255) + `" "xxxxx`} {
		if !strings.Contains(wire, want) {
			t.Errorf("Route53 holds\n%s\nwant %s in it", wire, want)
		}
	}
	// A new run reads them back as they were upserted, sorted by name then type, without SOA and NS.
	r.NewRun()
	got, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sets, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	rs, err := r.Get(ctx, "*.APPS.example.com.", "A")
	if err != nil || rs == nil || rs.Name != "*.apps.example.com" {
		t.Errorf("Get of the wildcard by another spelling = %v, %v", rs, err)
	}
}

func TestRoute53Refuses(t *testing.T) {
	ctx := context.Background()
	s, _, r := newTestRoute53(t, "example.com")
	for _, tc := range []struct {
		name string
		err  error
		call func() error
	}{
		{"a name outside the zone", dnstasks.ErrOutsideZone, func() error {
			return r.Upsert(ctx, dnstasks.RecordSet{Name: "api.example.org", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}})
		}},
		{"a name that only ends like the zone", dnstasks.ErrOutsideZone, func() error {
			_, err := r.Get(ctx, "badexample.com", "A")
			return err
		}},
		{"a type kubeup does not manage", nil, func() error { return r.Delete(ctx, "example.com", "MX") }},
		{"an invalid record set", nil, func() error {
			return r.Upsert(ctx, dnstasks.RecordSet{Name: "api.example.com", Type: "A", TTL: 60, Values: []string{"fd00::1"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || tc.err != nil && !errors.Is(err, tc.err) || engine.ClassOf(err) != engine.ClassTerminal {
				t.Errorf("got %v, want a terminal error (%v)", err, tc.err)
			}
		})
	}
	if got := s.Calls(); len(got) != 0 {
		t.Errorf("refusals called %v, want nothing", got)
	}
}

func TestRoute53Delete(t *testing.T) {
	ctx := context.Background()
	s, c, r := newTestRoute53(t, "example.com")
	wireChange(t, c, "example.com", types.ChangeActionCreate, "old.example.com", types.RRTypeA, "10.0.0.9", "10.0.0.8")
	wireChange(t, c, "example.com", types.ChangeActionCreate, "keep.example.com", types.RRTypeA, "10.0.0.7")
	s.ResetCalls()
	if err := r.Delete(ctx, "old.example.com", "A"); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "absent.example.com", "A"); err != nil {
		t.Errorf("Delete of an absent record set = %v, want nil", err)
	}
	if got, want := wireRecords(t, c, "example.com"), []string{"keep.example.com. A 300 10.0.0.7"}; !cmp.Equal(want, got) {
		t.Errorf("Route53 holds %q, want %q", got, want)
	}
	if got := s.Calls()["ChangeResourceRecordSets"]; got != 1 {
		t.Errorf("ChangeResourceRecordSets called %d times, want 1 (nothing for an absent set)", got)
	}

	// A set changed since the listing: Route53 refuses the DELETE; the error is retryable, and the next try,
	// after listing again, deletes it.
	wireChange(t, c, "example.com", types.ChangeActionUpsert, "keep.example.com", types.RRTypeA, "10.0.0.6")
	err := r.Delete(ctx, "keep.example.com", "A")
	if err == nil || engine.ClassOf(err) != engine.ClassRetryable {
		t.Fatalf("Delete of a set changed behind its back = %v, want a retryable error", err)
	}
	if err := r.Delete(ctx, "keep.example.com", "A"); err != nil {
		t.Fatalf("Delete, tried again: %v", err)
	}
	if got := wireRecords(t, c, "example.com"); len(got) != 0 {
		t.Errorf("Route53 holds %q, want nothing", got)
	}
}

func TestRoute53BadChangeFailsAlone(t *testing.T) {
	ctx := context.Background()
	s, c, r := newTestRoute53(t, "example.com")
	r.batchWindow, r.batchMax = time.Hour, 4
	wireChange(t, c, "example.com", types.ChangeActionCreate, "taken.example.com", types.RRTypeA, "10.0.0.1")
	if _, err := r.List(ctx); err != nil {
		t.Fatal(err)
	}
	s.ResetCalls()
	var wg sync.WaitGroup
	var good [3]error
	var bad error
	for i := range good {
		wg.Go(func() {
			good[i] = r.Upsert(ctx, dnstasks.RecordSet{Name: fmt.Sprintf("ok%d.example.com", i), Type: "A", TTL: 60, Values: []string{"10.0.0.2"}})
		})
	}
	wg.Go(func() {
		// A CNAME cannot share its name with other records: Route53 refuses the batch it is in.
		bad = r.Upsert(ctx, dnstasks.RecordSet{Name: "taken.example.com", Type: "CNAME", TTL: 60, Values: []string{"ok0.example.com"}})
	})
	wg.Wait()
	if err := errors.Join(good[:]...); err != nil {
		t.Errorf("the good changes failed: %v", err)
	}
	if bad == nil || ErrorCode(bad) != "InvalidChangeBatch" || engine.ClassOf(bad) != engine.ClassTerminal || !strings.Contains(bad.Error(), "taken.example.com") {
		t.Errorf("the bad change = %v, want a terminal InvalidChangeBatch naming it", bad)
	}
	if got := s.Calls()["ChangeResourceRecordSets"]; got != 5 {
		t.Errorf("ChangeResourceRecordSets called %d times, want 5 (the batch, then each change alone)", got)
	}
	if got := wireRecords(t, c, "example.com"); len(got) != 4 {
		t.Errorf("Route53 holds %q, want taken and ok0..2", got)
	}
	if rs, _ := r.Get(ctx, "taken.example.com", "CNAME"); rs != nil {
		t.Errorf("the cache holds the refused CNAME: %v", rs)
	}
}

func TestRoute53ListsEveryPage(t *testing.T) {
	ctx := context.Background()
	s, c, r := newTestRoute53(t, "example.com")
	const n = 700 // Route53 answers at most 300 record sets a page
	var changes []types.Change
	for i := range n {
		changes = append(changes, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: &types.ResourceRecordSet{
			Name: aws.String(fmt.Sprintf("n%03d.example.com", i)), Type: types.RRTypeA, TTL: aws.Int64(60),
			ResourceRecords: []types.ResourceRecord{{Value: aws.String("10.0.0.1")}},
		}})
	}
	for len(changes) > 0 {
		k := min(len(changes), 500)
		_, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
			HostedZoneId: aws.String(zoneID(t, c, "example.com")), ChangeBatch: &types.ChangeBatch{Changes: changes[:k]}})
		if err != nil {
			t.Fatal(err)
		}
		changes = changes[k:]
	}
	s.ResetCalls()
	got, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || got[n-1].Name != fmt.Sprintf("n%03d.example.com", n-1) {
		t.Errorf("List returned %d record sets, want %d", len(got), n)
	}
	if calls := s.Calls()["ListResourceRecordSets"]; calls < 3 {
		t.Errorf("ListResourceRecordSets called %d times, want a page per 300 record sets", calls)
	}
}

func TestRoute53ClassifiesErrors(t *testing.T) {
	ctx := context.Background()
	s, _, r := newTestRoute53(t, "example.com")
	if err := s.SetFaults(fakeaws.Faults{ThrottleRate: 1, Services: []string{"route53"}}); err != nil {
		t.Fatal(err)
	}
	_, err := r.List(ctx)
	if engine.ClassOf(err) != engine.ClassRetryable || !strings.Contains(err.Error(), "example.com") {
		t.Errorf("List, throttled = %v, want a retryable error naming the zone", err)
	}
	if err := s.SetFaults(fakeaws.Faults{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.List(ctx); err != nil {
		t.Errorf("List once the throttling stopped: %v", err)
	}
}
