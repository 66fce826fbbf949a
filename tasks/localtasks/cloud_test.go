package localtasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

func newCloud(t *testing.T) *Cloud {
	t.Helper()
	dir := t.TempDir()
	c, err := NewCloud(filepath.Join(dir, "pool"), filepath.Join(dir, "dns", "example.com.zone"), "example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const placeholder = "203.0.113.123"

// clusterGraph is the local cloud graph of a cluster with three etcd members for each of etcd-main and
// etcd-events, and the API's two placeholder records.
func clusterGraph(cluster string) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		for _, etcd := range []string{"main", "events"} {
			for _, m := range []string{"a", "b", "c"} {
				engine.Add(g, &Volume{
					Name:   fmt.Sprintf("%s.etcd-%s.%s", m, etcd, cluster),
					Zone:   ptr("local-" + m),
					SizeGB: ptr[int32](20),
					Tags: map[string]string{
						ClusterTag(cluster):    "owned",
						"k8s.io/etcd/" + etcd:  m + "/a,b,c",
						"k8s.io/role/master":   "1",
						"kubeup.dev/etcd/" + m: "",
					},
				})
			}
		}
		for _, name := range []string{"api." + cluster, "api.internal." + cluster} {
			engine.Add(g, &dnstasks.Record[*Cloud]{Name: name, Type: "A", Values: []string{placeholder}, Placeholder: true})
		}
		return g
	}
}

func TestCloudApplyThenNoChanges(t *testing.T) {
	ctx := context.Background()
	c := newCloud(t)
	plan := enginetest.ApplyThenNoChanges(t, ctx, c, clusterGraph("demo.example.com"))
	if n := len(plan.Changes); n != 8 {
		t.Errorf("the apply made %d changes, want 8", n)
	}

	vols, err := c.Pool.List(ctx, map[string]string{ClusterTag("demo.example.com"): "owned"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 6 {
		t.Errorf("%d volumes, want 6: %v", len(vols), vols)
	}
	sets, err := c.Zone.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []dnstasks.RecordSet{
		{Name: "api.demo.example.com", Type: "A", TTL: dnstasks.DefaultTTL, Values: []string{placeholder}},
		{Name: "api.internal.demo.example.com", Type: "A", TTL: dnstasks.DefaultTTL, Values: []string{placeholder}},
	}
	if diff := cmp.Diff(want, sets); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	parsed(t, c.Zone)
}

// protokube (here, a hand edit of the zone file) publishes the real address over a placeholder: the next
// update leaves it alone.
func TestCloudPlaceholderNotOverwritten(t *testing.T) {
	ctx := context.Background()
	c := newCloud(t)
	enginetest.ApplyThenNoChanges(t, ctx, c, clusterGraph("demo.example.com"))
	b, err := os.ReadFile(c.Zone.Path())
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "api.demo.example.com.\t60\tIN\tA\t"+placeholder, "api.demo.example.com. 30 IN A 10.0.0.5\napi.demo.example.com. 30 IN A 10.0.0.6", 1)
	if edited == string(b) {
		t.Fatalf("the placeholder is not in the zone file:\n%s", b)
	}
	if err := os.WriteFile(c.Zone.Path(), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	enginetest.ApplyThenNoChanges(t, ctx, c, clusterGraph("demo.example.com"))
	got, err := c.Zone.Get(ctx, "api.demo.example.com", "A")
	if err != nil {
		t.Fatal(err)
	}
	want := &dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 30, Values: []string{"10.0.0.5", "10.0.0.6"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("published record (-want +got):\n%s", diff)
	}
}

// DeleteOwned removes exactly what the cluster owns: another cluster's volume, a shared volume and records
// written by hand stay. When the last record goes, the zone file goes too.
func TestCloudDeleteOwned(t *testing.T) {
	ctx := context.Background()
	c := newCloud(t)
	enginetest.ApplyThenNoChanges(t, ctx, c, clusterGraph("demo.example.com"))
	mustCreate(t, c.Pool, VolumeInfo{Name: "a.etcd-main.other.example.com", Zone: "z", SizeGB: 1,
		Tags: map[string]string{ClusterTag("other.example.com"): "owned"}})
	mustCreate(t, c.Pool, VolumeInfo{Name: "shared", Zone: "z", SizeGB: 1,
		Tags: map[string]string{ClusterTag("demo.example.com"): "shared"}})
	mustUpsert(t, c.Zone, dnstasks.RecordSet{Name: "www.example.com", Type: "A", TTL: 60, Values: []string{"192.0.2.1"}})
	mustUpsert(t, c.Zone, dnstasks.RecordSet{Name: "notdemo.example.com", Type: "A", TTL: 60, Values: []string{"192.0.2.2"}})
	mustUpsert(t, c.Zone, dnstasks.RecordSet{Name: "demo.example.com", Type: "TXT", TTL: 60, Values: []string{"owner=demo"}})
	// eu.demo.example.com is another cluster, named under this one: its records are its own.
	mustUpsert(t, c.Zone, dnstasks.RecordSet{Name: "api.eu.demo.example.com", Type: "A", TTL: 60, Values: []string{"192.0.2.3"}})

	want := []string{
		"DNSRecord/api.demo.example.com/A",
		"DNSRecord/api.internal.demo.example.com/A",
		"DNSRecord/demo.example.com/TXT",
		"LocalVolume/a.etcd-events.demo.example.com",
		"LocalVolume/a.etcd-main.demo.example.com",
		"LocalVolume/b.etcd-events.demo.example.com",
		"LocalVolume/b.etcd-main.demo.example.com",
		"LocalVolume/c.etcd-events.demo.example.com",
		"LocalVolume/c.etcd-main.demo.example.com",
	}
	clusters := []string{"demo.example.com", "eu.demo.example.com", "other.example.com"}
	for _, dryRun := range []bool{true, false} {
		got, err := c.DeleteOwned(ctx, "demo.example.com", clusters, dryRun)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("DeleteOwned(dryRun=%v) (-want +got):\n%s", dryRun, diff)
		}
	}
	if got, err := c.DeleteOwned(ctx, "demo.example.com", clusters, false); err != nil || got != nil {
		t.Errorf("DeleteOwned again: %v, %v; want nothing left", got, err)
	}

	vols, _ := c.Pool.List(ctx, nil)
	var names []string
	for _, v := range vols {
		names = append(names, v.Name)
	}
	if diff := cmp.Diff([]string{"a.etcd-main.other.example.com", "shared"}, names); diff != "" {
		t.Errorf("volumes left (-want +got):\n%s", diff)
	}
	entries, _ := os.ReadDir(c.Pool.Dir())
	if len(entries) != 4 {
		t.Errorf("pool files left: %v, want the two volumes' images and sidecars", entries)
	}
	_, rrs := parsed(t, c.Zone)
	if diff := cmp.Diff([]string{"api.eu.demo.example.com. 60 IN A 192.0.2.3", "notdemo.example.com. 60 IN A 192.0.2.2", "www.example.com. 60 IN A 192.0.2.1"}, rrs); diff != "" {
		t.Errorf("records left (-want +got):\n%s", diff)
	}

	for _, rs := range []string{"api.eu.demo.example.com", "notdemo.example.com", "www.example.com"} {
		if err := c.Zone.Delete(ctx, rs, "A"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(c.Zone.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the zone file is still there: %v", err)
	}

	// The zone file goes with the cluster's last record.
	c2 := newCloud(t)
	enginetest.ApplyThenNoChanges(t, ctx, c2, clusterGraph("demo.example.com"))
	if _, err := c2.DeleteOwned(ctx, "demo.example.com", nil, false); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(c2.Zone.Path())); len(entries) != 0 {
		t.Errorf("files left in the zone file's directory: %v", entries)
	}
	if entries, _ := os.ReadDir(c2.Pool.Dir()); len(entries) != 0 {
		t.Errorf("files left in the pool: %v", entries)
	}
}

func TestCloudDeleteOwnedRefusesBadClusterName(t *testing.T) {
	c := newCloud(t)
	for _, name := range []string{"", "Demo.example.com", "demo.example.com."} {
		if _, err := c.DeleteOwned(context.Background(), name, nil, true); err == nil {
			t.Errorf("DeleteOwned(%q) accepted the name", name)
		}
	}
}

func TestCloudWithoutDNS(t *testing.T) {
	ctx := context.Background()
	c, err := NewCloud(t.TempDir(), "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &dnstasks.Record[*Cloud]{Name: "api.example.com", Type: "A", Values: []string{placeholder}}
	_, err = r.Find(ctx, c)
	checkErr(t, "Find", err, "the local cloud has no DNS zone")
	if got, err := c.DeleteOwned(ctx, "demo.example.com", nil, false); err != nil || got != nil {
		t.Errorf("DeleteOwned without DNS: %v, %v", got, err)
	}
	if _, err := NewCloud(t.TempDir(), "", "example.com", nil); err == nil {
		t.Error("NewCloud accepted a DNS zone without a zone file")
	}
}

func TestRecordDeps(t *testing.T) {
	enginetest.CheckDeps(t, &dnstasks.Record[*Cloud]{Name: "api.example.com", Type: "A", Values: []string{placeholder}})
}
