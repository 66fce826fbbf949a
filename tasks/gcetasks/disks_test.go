package gcetasks

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// Two instances of a group, each with its own metadata server, claim one etcd disk: the first attaches it and
// finds its device, the second is told who holds it; both list it with its tags decoded.
func TestDisksClaimAndIdentity(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	s := defaultSpec()
	s.size = 2
	mustRun(t, c, engine.Apply, clusterGraph(s))
	var names []string
	err := c.Compute.Instances.List(testProject, zones[0]).Pages(ctx, func(l *compute.InstanceList) error {
		for _, i := range l.Items {
			names = append(names, i.Name)
		}
		return nil
	})
	if err != nil || len(names) != 2 {
		t.Fatalf("instances of zone a: %v, %v", names, err)
	}
	provider := func(name string) *Disks {
		md := httptest.NewServer(srv.MetadataHandler(name))
		t.Cleanup(md.Close)
		t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
		me, zone, project, err := InstanceIdentity(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if me.NodeID != name || zone != zones[0] || project != testProject || me.InternalIP == "" {
			t.Fatalf("identity of %s: %+v, %s, %s", name, me, zone, project)
		}
		root := t.TempDir()
		return NewDisks(c.Compute, project, zone, me, DisksOptions{Root: root})
	}
	first, second := provider(names[0]), provider(names[1])
	disk := "a-etcd-main-gce-example-com"
	filter := map[string]string{"kubernetes.io/cluster/" + testCluster: "owned", "k8s.io/role/control-plane": "1"}
	vols, err := first.List(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	// Every zone's disks of the region (protokube points the API's names at every zone's holders).
	if len(vols) != 3 || vols[0].ID != disk || vols[0].Zone != zones[0] || vols[0].Tags["k8s.io/etcd/main"] != "a/a,b,c" || vols[0].Holder != nil ||
		vols[1].Zone != zones[1] || vols[2].Zone != zones[2] {
		t.Fatalf("List = %+v, want the free disks of zones a, b and c with their tags", vols)
	}
	if _, err := first.Attach(ctx, disk); engine.ClassOf(err) != engine.ClassNotReady {
		t.Fatalf("Attach before the device shows: %v, want not ready", err)
	}
	dev := filepath.Join(first.root, "dev", "disk", "by-id", "google-"+disk)
	if err := os.MkdirAll(filepath.Dir(dev), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := first.Attach(ctx, disk); err != nil || got != dev {
		t.Fatalf("Attach again = %q, %v; want %s", got, err, dev)
	}
	if got, err := first.Attached(ctx, disk); err != nil || got != dev {
		t.Errorf("Attached = %q, %v", got, err)
	}
	_, err = second.Attach(ctx, disk)
	var held *volumetasks.HeldError
	if !errors.As(err, &held) || held.Holder.NodeID != names[0] || held.Holder.InternalIP == "" {
		t.Fatalf("Attach by the second instance: %v, want held by %s with its address", err, names[0])
	}
	vols, err = second.List(ctx, filter)
	if err != nil || len(vols) != 3 || vols[0].Holder == nil || vols[0].Holder.NodeID != names[0] {
		t.Fatalf("List by the second instance = %+v, %v", vols, err)
	}
	if err := second.Detach(ctx, disk); err != nil {
		t.Errorf("Detach of a disk the instance does not hold: %v", err)
	}
	if err := first.Detach(ctx, disk); err != nil {
		t.Fatal(err)
	}
	if vols, _ := first.List(ctx, filter); len(vols) != 3 || vols[0].Holder != nil {
		t.Errorf("after Detach: %+v, want free", vols)
	}
}
