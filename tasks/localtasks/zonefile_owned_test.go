package localtasks

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// TestZoneFileDeleteCluster: a cluster's records leave the file, those of another cluster (named under it, or
// beside it) and other names stay; a dry run deletes nothing; the file kubeup made goes with its last record; a
// missing file holds nothing.
func TestZoneFileDeleteCluster(t *testing.T) {
	ctx := context.Background()
	z := newZoneFile(t)
	for _, rs := range []dnstasks.RecordSet{
		{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"203.0.113.1"}},
		{Name: "api.internal.demo.example.com", Type: "A", TTL: 60, Values: []string{"203.0.113.1"}},
		{Name: "demo.example.com", Type: "TXT", TTL: 60, Values: []string{"owner"}},
		{Name: "api.eu.demo.example.com", Type: "A", TTL: 60, Values: []string{"203.0.113.2"}},
		{Name: "api.demo2.example.com", Type: "A", TTL: 60, Values: []string{"203.0.113.3"}},
		{Name: "www.example.com", Type: "CNAME", TTL: 60, Values: []string{"example.net"}},
	} {
		if err := z.Upsert(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"DNSRecord/api.demo.example.com/A", "DNSRecord/api.internal.demo.example.com/A", "DNSRecord/demo.example.com/TXT"}
	others := []string{"demo.example.com", "eu.demo.example.com", "demo2.example.com"}
	got, err := z.DeleteCluster(ctx, "demo.example.com", others, true)
	if err != nil || !cmp.Equal(want, got) {
		t.Fatalf("dry run = %v, %v; want %v", got, err, want)
	}
	if all, _ := z.List(ctx); len(all) != 6 {
		t.Fatalf("the dry run deleted records: %d left, want 6", len(all))
	}
	got, err = z.DeleteCluster(ctx, "demo.example.com", others, false)
	if err != nil || !cmp.Equal(want, got) {
		t.Fatalf("DeleteCluster = %v, %v; want %v", got, err, want)
	}
	var left []string
	all, _ := z.List(ctx)
	for _, rs := range all {
		left = append(left, rs.Name)
	}
	if diff := cmp.Diff([]string{"api.demo2.example.com", "api.eu.demo.example.com", "www.example.com"}, left); diff != "" {
		t.Errorf("records left (-want +got):\n%s", diff)
	}
	parsed(t, z) // still a zone a server loads

	for _, c := range []string{"eu.demo.example.com", "demo2.example.com", "example.com"} {
		if _, err := z.DeleteCluster(ctx, c, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(z.Path()); !os.IsNotExist(err) {
		t.Errorf("the file kubeup made is left with no record: %v", err)
	}
	if got, err := z.DeleteCluster(ctx, "demo.example.com", nil, false); err != nil || len(got) != 0 {
		t.Errorf("DeleteCluster on a missing file = %v, %v; want nothing", got, err)
	}
	if _, err := z.DeleteCluster(ctx, "-bad-", nil, true); err == nil {
		t.Error("DeleteCluster of a bad cluster name succeeded")
	}
}
