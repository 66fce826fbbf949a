package gce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
	"kubeup.dev/kubeup/test/internal/storecheck"
)

// The fault matrix of the gce pipeline: rate-limited share x 5xx share x eventual consistency x slow attach, each
// cell a fresh project in which the kubeup binary's `update cluster --yes` converges (re-run at most
// maxUpdateRuns times), protokube's disk provider (gcetasks.Disks) claims the member disks for the cluster's
// instances under the same faults, a dry run (faults still on) has nothing to do, and the project holds exactly
// what the spec asks for, once, and the state store only whole objects.

// maxUpdateRuns bounds the `update --yes` runs a cell may take to converge: one run is expected; a run that fails
// under faults (a task out of retries) is run again, as an operator would.
const maxUpdateRuns = 3

// faults are the cell's faults of the fake: eventual consistency makes a new disk unknown to 2 reads; slow attach
// keeps every operation (attachDisk's, and kubeup's own) RUNNING for 2 more polls: GCE has no fault of its own for
// attachments, an attachment is an operation. No latency.
func cellFaults(c e2e.FaultCell, seed uint64) fakegce.Faults {
	f := fakegce.Faults{RateLimitRate: c.PushedBack, ServerErrorRate: c.ServerErrors, Seed: seed}
	if c.Consistency {
		f.DiskInvisibleCalls = 2
	}
	if c.SlowAttach {
		f.SlowOperations = 2
	}
	return f
}

// TestFaultMatrix runs every cell of the fault matrix (e2e.FaultMatrix), each in a fresh account of its own.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	e2e.FaultMatrix(t, "ratelimit", runCell)
}

func runCell(t *testing.T, cell e2e.FaultCell, seed uint64) {
	a := newProject(t, false)
	a.createCluster(cluster)
	faults := cellFaults(cell, seed)
	if err := a.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	k := e2e.Kubeup{T: t, Bin: kubeupBinary, Env: a.env}
	for run := 1; ; run++ {
		out, errOut, err := k.Run("update", "cluster", cluster, "--yes")
		if err == nil {
			break
		}
		if run == maxUpdateRuns {
			t.Fatalf("update --yes did not converge in %d runs; the last: %v\n%s%s", run, err, out, errOut)
		}
		t.Logf("update --yes, run %d: %v\n%s", run, err, errOut)
	}

	a.claimMemberDisks(t, faults)

	out, errOut, err := k.Run("update", "cluster", cluster)
	if err != nil || !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the dry run after: %v\n%s%s\nwant no changes", err, out, errOut)
	}

	if err := a.fake.SetFaults(fakegce.Faults{}); err != nil {
		t.Fatal(err)
	}
	a.settle(faults.DiskInvisibleCalls)
	a.checkNoDuplicates(t.Name())
	if o := a.owned(cluster); len(o.Disks) != 6 || len(o.Templates) != 4 || len(o.Groups) != 6 {
		t.Errorf("the project holds %+v; want 6 disks, 4 instance templates, 6 managed instance groups", o)
	}
	var recs []string
	for _, r := range a.records() {
		if strings.Contains(r, cluster) {
			recs = append(recs, r)
		}
	}
	slices.Sort(recs)
	if want := []string{"api." + cluster + ". A", "api.internal." + cluster + ". A"}; !slices.Equal(recs, want) {
		t.Errorf("the managed zone's records of the cluster: %v, want %v", recs, want)
	}
	a.checkStore(t, cluster)
}

// claimant is one instance claiming disks with protokube's provider, on a node root of its own where every disk
// of the cluster shows, once attached, as /dev/disk/by-id/google-<name>.
type claimant struct {
	name, zone   string
	controlPlane bool
	root         string
	disks        *gcetasks.Disks
	devices      map[string]string // disk name -> the device Attach must return
}

// claimMemberDisks is protokube's claim on every instance of the cluster at once, under faults: in each zone, the
// control-plane instance and a node instance both claim that zone's member disks (the node as a stand-in for a
// second protokube racing for them). Each disk ends attached to one instance, whose Attach returned its device;
// the other claimant's Attach says it is held (volumetasks.HeldError). A second Attach by the winner returns the
// same device without another attachDisk. The instances and disks are listed without faults first (the test's
// own reads), then the faults are set again for the claims.
func (a *account) claimMemberDisks(t *testing.T, faults fakegce.Faults) {
	t.Helper()
	ctx := context.Background()
	if err := a.fake.SetFaults(fakegce.Faults{}); err != nil {
		t.Fatal(err)
	}
	a.settle(faults.DiskInvisibleCalls)
	var claimants []*claimant
	for _, z := range zones {
		list, err := a.compute.Instances.List(project, z).Do()
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range list.Items {
			cp := strings.HasPrefix(i.Name, "control-plane-")
			if !cp && slices.ContainsFunc(claimants, func(c *claimant) bool { return c.zone == z && !c.controlPlane }) {
				continue // one node per zone
			}
			var ip string
			if len(i.NetworkInterfaces) > 0 {
				ip = i.NetworkInterfaces[0].NetworkIP
			}
			root := t.TempDir()
			claimants = append(claimants, &claimant{name: i.Name, zone: z, controlPlane: cp, root: root, devices: map[string]string{},
				disks: gcetasks.NewDisks(a.compute, project, z, volumetasks.Holder{NodeID: i.Name, InternalIP: ip}, gcetasks.DisksOptions{Root: root})})
		}
	}
	if len(claimants) < 4 {
		t.Fatalf("claimants %d: want a control-plane instance in each zone and a node", len(claimants))
	}
	filter := map[string]string{"kubernetes.io/cluster/" + cluster: "owned", model.TagControlPlane: "1"}
	all, err := claimants[0].disks.List(ctx, filter)
	if err != nil || len(all) != 6 {
		t.Fatalf("protokube's provider lists %v (%v), want the 6 member disks", all, err)
	}
	for _, c := range claimants {
		for _, d := range all {
			dev := filepath.Join(c.root, "dev/disk/by-id", "google-"+d.ID)
			if err := os.MkdirAll(filepath.Dir(dev), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dev, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			c.devices[d.ID] = dev
		}
	}
	if err := a.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	type outcome struct {
		device string
		held   *volumetasks.HeldError
	}
	var mu sync.Mutex
	got := map[[2]string]outcome{} // [instance, disk]
	var wg sync.WaitGroup
	for _, c := range claimants {
		wg.Go(func() {
			for _, d := range all {
				if d.Zone != c.zone {
					continue
				}
				dev, err := attach(ctx, c.disks, d.ID)
				var held *volumetasks.HeldError
				if err != nil && !errors.As(err, &held) {
					t.Errorf("instance %s claiming %s: %v", c.name, d.ID, err)
					continue
				}
				mu.Lock()
				got[[2]string{c.name, d.ID}] = outcome{dev, held}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d instances claimed the disks of their zones in %v", len(claimants), time.Since(start).Round(time.Millisecond))
	if t.Failed() {
		t.FailNow()
	}

	for _, d := range all {
		disk, err := a.compute.Disks.Get(project, d.Zone, d.ID).Do()
		for try := 0; err != nil && try < 20; try++ { // the test's own read, through the faults
			disk, err = a.compute.Disks.Get(project, d.Zone, d.ID).Do()
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(disk.Users) != 1 {
			t.Errorf("disk %s is attached to %v, want one instance", d.ID, disk.Users)
			continue
		}
		holder := path.Base(disk.Users[0])
		for _, c := range claimants {
			o, ok := got[[2]string{c.name, d.ID}]
			switch {
			case !ok:
			case c.name == holder && o.device != c.devices[d.ID]:
				t.Errorf("instance %s holds %s, and its Attach returned %q (held: %v), want %s", c.name, d.ID, o.device, o.held, c.devices[d.ID])
			case c.name != holder && (o.held == nil || o.held.Holder.NodeID != holder):
				t.Errorf("instance %s claiming %s held by %s: device %q, held error %v; want a HeldError naming %s", c.name, d.ID, holder, o.device, o.held, holder)
			}
			if c.name != holder || !ok {
				continue
			}
			before := a.fake.Calls()["compute.instances.attachDisk"]
			if dev, err := attach(ctx, c.disks, d.ID); err != nil || dev != c.devices[d.ID] {
				t.Errorf("instance %s claiming %s again: %q, %v, want %s", c.name, d.ID, dev, err, c.devices[d.ID])
			}
			if n := a.fake.Calls()["compute.instances.attachDisk"] - before; n != 0 {
				t.Errorf("instance %s claiming %s, which it holds, called attachDisk %d times", c.name, d.ID, n)
			}
		}
	}
}

// attach is protokube's Attach of one disk, tried again while the provider says not ready or retryable, as its
// rounds do.
func attach(ctx context.Context, p volumetasks.Provider, id string) (string, error) {
	for try := 1; ; try++ {
		dev, err := p.Attach(ctx, id)
		if err == nil || try == 40 {
			return dev, err
		}
		if c := engine.ClassOf(err); c != engine.ClassNotReady && c != engine.ClassRetryable {
			return dev, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// storeObjects returns the state store's objects of cluster name (names relative to its directory) and contents,
// listed through the GCS JSON API and read from the fake.
func (a *account) storeObjects(t *testing.T, name string) map[string][]byte {
	t.Helper()
	prefix := "clusters/" + name + "/"
	objs := map[string][]byte{}
	token := ""
	for {
		q := url.Values{"prefix": {prefix}}
		if token != "" {
			q.Set("pageToken", token)
		}
		resp, err := http.Get(a.gcsURL + "/storage/v1/b/" + bucket + "/o?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Items []struct {
				Name string
				Size string
			}
			NextPageToken string
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("listing gs://%s/%s: %s, %v", bucket, prefix, resp.Status, err)
		}
		for _, it := range page.Items {
			data, _, ok := a.gcs.Object(bucket, it.Name)
			if !ok {
				t.Fatalf("gs://%s/%s is listed and not there", bucket, it.Name)
			}
			if fmt.Sprint(len(data)) != it.Size {
				t.Errorf("gs://%s/%s: %d bytes, listed as %s", bucket, it.Name, len(data), it.Size)
			}
			objs[strings.TrimPrefix(it.Name, prefix)] = data
		}
		if token = page.NextPageToken; token == "" {
			return objs
		}
	}
}

// checkStore fails the test unless every object of the cluster's state is whole, after a run that ended
// (storecheck.Problems).
func (a *account) checkStore(t *testing.T, name string) {
	t.Helper()
	for _, problem := range storecheck.Problems("gs://"+bucket+"/clusters/"+name, a.storeObjects(t, name), true) {
		t.Error(problem)
	}
}
