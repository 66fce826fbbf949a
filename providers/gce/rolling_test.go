package gceprovider

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/gcelabels"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// TestRollingUpdateGCEControlPlane mirrors test/aws's TestRollingUpdateControlPlane on the GCE fake: a cluster just
// made has nothing to replace; after the machine type of the three control-plane groups changes (replace, update
// --yes), rolling-update --cloudonly lists their three instances as NeedsUpdate, made from the old template, and
// the nodes as up to date, changing nothing; --yes --cloudonly has each one's managed instance group recreate it
// (recreateInstances: the same name, a new id, the new template's machine type), one at a time, and the log shows
// the etcd quorum check of main and events (ok, based on the member disks' attachments) before each, and the
// replacement done before the next. A stand-in for protokube attaches each zone's free member disks to the
// zone's running control-plane instance, as protokube's claim does. The nodes are untouched, and a second
// listing finds nothing to do.
func TestRollingUpdateGCEControlPlane(t *testing.T) {
	ctx := context.Background()
	srv := fakeGCE(t)
	cs := gsClusters(t)
	_, igs := createDemo(t, cs)
	var out bytes.Buffer
	// The fake answers with its live objects, encoded after it lets go of its lock: a change (the stand-in's
	// attachDisk) during a list (the rolling update's) would race. One call at a time, then.
	var one sync.Mutex
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		one.Lock()
		defer one.Unlock()
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Setenv(gcetasks.EndpointEnv, hs.URL+"/")
	svc, err := compute.NewService(ctx, option.WithEndpoint(hs.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	var migs []gceMIG // the control plane's managed groups
	for _, ig := range igs {
		if ig.Spec.Role == model.RoleControlPlane {
			for _, z := range ig.Spec.Zones {
				migs = append(migs, gceMIG{zone: z, name: InstanceGroupManagerName(demo, ig.Metadata.Name, z)})
			}
		}
	}
	stop := playGCEProtokube(t, svc, migs)
	defer func() { stop() }()
	e2e.WaitFor(t, 30*time.Second, "the six member disks to be attached", func() (int, bool) {
		n := 0
		for _, d := range memberDisks(ctx, t, svc) {
			if len(d.Users) > 0 {
				n++
			}
		}
		return n, n == 6
	})
	out.Reset()
	if err := cs.RollingUpdate(ctx, demo, cloudup.RollingOptions{Out: &out, CloudOnly: true}); err != nil || !strings.Contains(out.String(), "No machine of cluster "+demo+" needs to be replaced") {
		t.Fatalf("rolling-update of a new cluster: %v\n%s", err, &out)
	}
	before := gceInstances(t, svc, migs)

	stored, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	for _, ig := range stored.InstanceGroups {
		if ig.Spec.Role == model.RoleControlPlane {
			ig.Spec.MachineType = "e2-standard-4"
		}
	}
	if _, err := cs.Replace(ctx, "test", &model.Objects{Cluster: stored.Cluster, InstanceGroups: stored.InstanceGroups}, cloudup.ReplaceOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, &out)
	}
	out.Reset()
	srv.ResetCalls()
	if err := cs.RollingUpdate(ctx, demo, cloudup.RollingOptions{Out: &out, CloudOnly: true}); err != nil {
		t.Fatalf("rolling-update --cloudonly: %v\n%s", err, &out)
	}
	if m := mutatingCalls(srv); len(m) != 0 {
		t.Errorf("rolling-update without --yes changed the cloud: %v", m)
	}
	if !regexp.MustCompile(`(?m)^nodes\s+Ready\s+0\s+2\s`).MatchString(out.String()) {
		t.Errorf("the nodes are not listed as up to date and ready:\n%s", &out)
	}
	var order []string // the instances listed, in the order they are replaced
	for _, m := range regexp.MustCompile(`(?m)^(\S+)\s+control-plane-\S+\s+europe-west1-[bcd]\s+NeedsUpdate\s+true\s+made from instance template (\S+), the group makes (\S+)$`).FindAllStringSubmatch(out.String(), -1) {
		order = append(order, m[1])
		if m[2] == m[3] {
			t.Errorf("an instance listed as made from the group's own template: %s", m[0])
		}
	}
	if listed, want := slices.Sorted(slices.Values(order)), slices.Sorted(maps.Keys(before)); !slices.Equal(listed, want) {
		t.Fatalf("instances listed as NeedsUpdate: %v, want the control plane's %v\n%s", listed, want, &out)
	}

	// One member of etcd-main down (its disk, in the last instance's zone, detached, and nothing to claim it
	// again): --yes refuses to take down the first instance, saying that etcd would lose its quorum.
	stop()
	var victim *compute.Disk
	for _, d := range memberDisks(ctx, t, svc) {
		if _, ok := d.Labels[gcelabels.EtcdLabelKey("main")]; ok && len(d.Users) > 0 && path.Base(d.Users[0]) == order[2] {
			victim = d
		}
	}
	if victim == nil {
		t.Fatalf("no etcd-main disk is attached to %s", order[2])
	}
	if _, err := svc.Instances.DetachDisk("kubeup-demo", path.Base(victim.Zone), order[2], victim.Name).Do(); err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	err = cs.RollingUpdate(ctx, demo, cloudup.RollingOptions{Out: &out, Apply: true, CloudOnly: true, Interval: 20 * time.Millisecond, Timeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "etcd would lose its quorum") ||
		!strings.Contains(err.Error(), "etcd-main: without "+order[0]+" only 1 of its 3 members would be healthy") ||
		!strings.Contains(err.Error(), "its disk "+victim.Name+" is attached to no instance") {
		t.Errorf("rolling-update --yes with a member down: %v; want etcd-main's quorum lost without %s, %s attached to no instance", err, order[0], victim.Name)
	}
	if m := mutatingCalls(srv); len(m) != 0 {
		t.Errorf("rolling-update --yes with a member down changed the cloud: %v", m)
	}
	stop = playGCEProtokube(t, svc, migs) // claims the disk again

	var logs bytes.Buffer
	out.Reset()
	srv.ResetCalls()
	err = cs.RollingUpdate(ctx, demo, cloudup.RollingOptions{Out: &out, Apply: true, CloudOnly: true, Interval: 20 * time.Millisecond,
		Timeout: 30 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Logf("rolling-update --yes --cloudonly:\n%s\n%s", &out, &logs)
	if err != nil {
		t.Fatalf("rolling-update --yes --cloudonly: %v", err)
	}
	lines := strings.Split(logs.String(), "\n")
	pos := func(re string) int { return slices.IndexFunc(lines, regexp.MustCompile(re).MatchString) }
	last := -1
	for _, name := range order {
		for _, ec := range []string{"main", "events"} {
			p := pos(`etcd quorum check.* instance=` + regexp.QuoteMeta(name) + `.* etcdCluster=` + ec + ` members=3 quorum=2 .*ok=true basis=".*persistent disk is attached to a RUNNING instance`)
			if p < 0 || p < last {
				t.Errorf("no quorum check of etcd-%s for %s after the former replacement (line %d, former %d)", ec, name, p, last)
			}
			last = max(last, p)
		}
		done := pos(`the replacement is ready and the cluster healthy.* instance=` + regexp.QuoteMeta(name))
		if done < last {
			t.Errorf("the replacement of %s is not logged done after its quorum checks (line %d, checks %d)", name, done, last)
		}
		last = done
	}
	after := gceInstances(t, svc, migs)
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("instance %s was not recreated under its name", name)
		case a.id == b.id || a.machineType != "e2-standard-4":
			t.Errorf("instance %s after the update: id %s (was %s), machine type %s, want a new id and e2-standard-4", name, a.id, b.id, a.machineType)
		}
	}
	if len(after) != 3 {
		t.Errorf("the control plane has %d instances after the update, want 3: %v", len(after), after)
	}
	calls := mutatingCalls(srv)
	if calls["compute.instanceGroupManagers.recreateInstances"] != 3 {
		t.Errorf("recreateInstances called %d times, want 3", calls["compute.instanceGroupManagers.recreateInstances"])
	}
	for op := range calls {
		if op != "compute.instanceGroupManagers.recreateInstances" && op != "compute.instances.attachDisk" {
			t.Errorf("rolling-update made another change than recreating instances (and the stand-in's claims): %s", op)
		}
	}
	out.Reset()
	if err := cs.RollingUpdate(ctx, demo, cloudup.RollingOptions{Out: &out, CloudOnly: true}); err != nil || !strings.Contains(out.String(), "No machine of cluster "+demo+" needs to be replaced") {
		t.Errorf("after the rolling update, machines still need it: %v\n%s", err, &out)
	}
}

// gceMIG is a managed instance group of a zone.
type gceMIG struct{ zone, name string }

// gceInstance is a managed instance's id and machine type.
type gceInstance struct{ id, machineType, zone string }

// gceInstances returns the RUNNING instances of the groups, by name.
func gceInstances(t *testing.T, svc *compute.Service, migs []gceMIG) map[string]gceInstance {
	t.Helper()
	out := map[string]gceInstance{}
	for _, g := range migs {
		l, err := svc.InstanceGroupManagers.ListManagedInstances("kubeup-demo", g.zone, g.name).Do()
		if err != nil {
			t.Fatal(err)
		}
		for _, mi := range l.ManagedInstances {
			in, err := svc.Instances.Get("kubeup-demo", g.zone, mi.Name).Do()
			if err != nil {
				t.Fatal(err)
			}
			if in.Status == "RUNNING" {
				out[mi.Name] = gceInstance{id: fmt.Sprint(in.Id), machineType: path.Base(in.MachineType), zone: g.zone}
			}
		}
	}
	return out
}

// memberDisks returns the disks that carry an etcd member label (kubeup-etcd-<etcd cluster>).
func memberDisks(ctx context.Context, t *testing.T, svc *compute.Service) []*compute.Disk {
	var out []*compute.Disk
	err := svc.Disks.AggregatedList("kubeup-demo").Pages(ctx, func(l *compute.DiskAggregatedList) error {
		for _, scoped := range l.Items {
			for _, d := range scoped.Disks {
				for k := range d.Labels {
					if strings.HasPrefix(k, gcelabels.EtcdLabelKey("")) {
						out = append(out, d)
						break
					}
				}
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		t.Errorf("listing the disks: %v", err)
	}
	return out
}

// playGCEProtokube stands in for protokube's claim on the control-plane instances: every 20ms, each member disk
// attached to no instance is attached to the running control-plane instance of its zone. It returns a function
// that stops it.
func playGCEProtokube(t *testing.T, svc *compute.Service, migs []gceMIG) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var byZone map[string]string
			for _, d := range memberDisks(ctx, t, svc) {
				if len(d.Users) > 0 {
					continue
				}
				if byZone == nil {
					byZone = map[string]string{}
					for _, g := range migs {
						l, err := svc.InstanceGroupManagers.ListManagedInstances("kubeup-demo", g.zone, g.name).Context(ctx).Do()
						if err != nil {
							break
						}
						for _, mi := range l.ManagedInstances {
							if mi.InstanceStatus == "RUNNING" {
								byZone[g.zone] = mi.Name
							}
						}
					}
				}
				zone := path.Base(d.Zone)
				name, ok := byZone[zone]
				if !ok {
					continue
				}
				if _, err := svc.Instances.AttachDisk("kubeup-demo", zone, name, &compute.AttachedDisk{Source: d.SelfLink, DeviceName: d.Name}).Context(ctx).Do(); err != nil && ctx.Err() == nil {
					t.Logf("the stand-in for protokube could not attach %s to %s: %v", d.Name, name, err)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}
