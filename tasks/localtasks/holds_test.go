package localtasks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/tasks/dnstasks"
)

// heldCloud is the local cloud of cluster demo.example.com on machine m (its pool, loop devices and clock),
// with its volumes a.etcd-main and b.etcd-main and its DNS records.
func heldCloud(t *testing.T, m *machine) *Cloud {
	t.Helper()
	c, err := NewCloud(m.dir, filepath.Join(t.TempDir(), "example.com.zone"), "example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.loops, c.now = m.loops, m.clock.now
	c.mounts = func(dev string) []string { return nil } // the fake devices are mounted nowhere (not the machine's loop devices of the same names)
	for _, name := range []string{"a.etcd-main", "b.etcd-main"} {
		mustCreate(t, c.Pool, VolumeInfo{Name: name, Zone: "local-a", SizeGB: 1,
			Tags: map[string]string{ClusterTag("demo.example.com"): "owned"}})
	}
	mustUpsert(t, c.Zone, dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"192.0.2.1"}})
	return c
}

// poolFiles lists the files in the pool directory, but the lock's record.
func poolFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != holderFile {
			out = append(out, e.Name())
		}
	}
	return out
}

// wantHolds checks that err is a *HeldVolumesError with these holds, by their String.
func wantHolds(t *testing.T, err error, want ...string) {
	t.Helper()
	var held *HeldVolumesError
	if !errors.As(err, &held) {
		t.Fatalf("error %v, want a *HeldVolumesError", err)
	}
	var got []string
	for _, h := range held.Holds {
		got = append(got, h.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("holds (-want +got):\n%s\nerror: %v", diff, err)
	}
}

// A volume a node holds (an unexpired claim, or a loop device still bound to its image) is never deleted, and
// its refusal deletes nothing at all: not the volume nobody holds, not the DNS records. The dry run lists
// everything, with the same refusal.
func TestDeleteOwnedRefusesHeldVolumes(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t)
	c := heldCloud(t, m)
	n1 := m.node(t, "n1", time.Minute)
	dev := mustAttach(t, n1, "a.etcd-main")
	m.loops.setBusy(dev, true)
	lock, err := c.Pool.LockNode("n1")
	if err != nil {
		t.Fatal(err)
	}
	before := poolFiles(t, m.dir)
	until := m.clock.now().Add(time.Minute).Format(time.DateTime)

	keys, err := c.DeleteOwned(ctx, "demo.example.com", nil, true)
	wantHolds(t, err, "volume a.etcd-main: claimed by node n1 until "+until+" UTC, attached as "+dev+
		", in use (mounted in another mount namespace, or opened exclusively)")
	want := []string{"DNSRecord/api.demo.example.com/A", "LocalVolume/a.etcd-main", "LocalVolume/b.etcd-main"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}

	_, err = c.DeleteOwned(ctx, "demo.example.com", nil, false)
	wantHolds(t, err, "volume a.etcd-main: claimed by node n1 until "+until+" UTC, attached as "+dev+
		", in use (mounted in another mount namespace, or opened exclusively)")
	for _, s := range []string{"stop protokube on node n1", "losetup --detach " + dev, "remove its claim " + filepath.Join(m.dir, "a.etcd-main.claim"),
		"or wait until its lease expires at " + until + " UTC", "nothing was deleted"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the refusal does not say %q: %v", s, err)
		}
	}
	if diff := cmp.Diff(before, poolFiles(t, m.dir)); diff != "" {
		t.Errorf("the refused delete changed the pool (-before +after):\n%s", diff)
	}
	if got, err := c.Zone.Get(ctx, "api.demo.example.com", "A"); err != nil || got == nil {
		t.Errorf("the refused delete deleted the DNS record: %v, %v", got, err)
	}
	if got := attached(t, n1, "a.etcd-main"); got != dev {
		t.Errorf("node n1's volume after the refusal: %q, want %q", got, dev)
	}

	// Unmounted, with its lease run out, the volume is still held by its loop device.
	m.loops.setBusy(dev, false)
	m.clock.add(time.Hour)
	_, err = c.DeleteOwned(ctx, "demo.example.com", nil, false)
	wantHolds(t, err, "volume a.etcd-main: claimed by node n1 until "+until+" UTC (expired), attached as "+dev)

	// Its device unbound, but its claim renewed: held by the claim.
	if err := m.loops.detach(ctx, dev); err != nil {
		t.Fatal(err)
	}
	if err := n1.Renew(ctx, []string{"a.etcd-main"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteOwned(ctx, "demo.example.com", nil, false)
	wantHolds(t, err, "volume a.etcd-main: claimed by node n1 until "+m.clock.now().Add(time.Minute).Format(time.DateTime)+" UTC")

	// A loop device bound without a claim holds the volume too.
	if _, err := m.loops.attach(ctx, m.img("b.etcd-main")); err != nil {
		t.Fatal(err)
	}
	m.clock.add(time.Hour)
	_, err = c.DeleteOwned(ctx, "demo.example.com", nil, false)
	wantHolds(t, err, "volume b.etcd-main: no claim, attached as /dev/loop1")
	if diff := cmp.Diff(before, poolFiles(t, m.dir)); diff != "" {
		t.Errorf("the refused deletes changed the pool (-before +after):\n%s", diff)
	}

	// Nobody holds either: both go, with their claims, and the lock file of node n1 once no process holds it.
	if err := m.loops.detach(ctx, "/dev/loop1"); err != nil {
		t.Fatal(err)
	}
	got, err := c.DeleteOwned(ctx, "demo.example.com", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delete (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(lock.Name()); err != nil {
		t.Errorf("the lock file of node n1, held by a process, is gone: %v", err)
	}
	lock.Close()
	if _, err := c.Pool.RemoveNodeLock("n1"); err != nil {
		t.Fatal(err)
	}
	if left := poolFiles(t, m.dir); len(left) != 0 {
		t.Errorf("files left in the pool: %v", left)
	}
}

// Deleting a volume removes its claim, and the lock file of the node whose claim it was when no process holds
// it: nothing of the cluster is left in the pool.
func TestDeleteOwnedRemovesClaimsAndNodeLocks(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t)
	c := heldCloud(t, m)
	n1 := m.node(t, "n1", time.Minute)
	dev := mustAttach(t, n1, "a.etcd-main")
	lock, err := c.Pool.LockNode("n1")
	if err != nil {
		t.Fatal(err)
	}
	lock.Close() // protokube ended
	if err := m.loops.detach(ctx, dev); err != nil {
		t.Fatal(err)
	}
	m.clock.add(time.Hour)
	if _, err := c.DeleteOwned(ctx, "demo.example.com", nil, false); err != nil {
		t.Fatal(err)
	}
	if left := poolFiles(t, m.dir); len(left) != 0 {
		t.Errorf("files left in the pool: %v", left)
	}
}

// A claim left next to a volume that was deleted is not a claim of a new volume of the same name: the new
// volume is nobody's, and another node attaches it.
func TestCreateDoesNotInheritAClaim(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "a.etcd-main")
	n1, n2 := m.node(t, "n1", time.Hour), m.node(t, "n2", time.Hour)
	dev := mustAttach(t, n1, "a.etcd-main")
	if err := m.loops.detach(ctx, dev); err != nil {
		t.Fatal(err)
	}
	// Deleted as an older kubeup did, or by hand: the image and the sidecar, the claim left behind.
	for _, f := range []string{"a.etcd-main.img", "a.etcd-main.json"} {
		if err := os.Remove(filepath.Join(m.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, n1.pool, VolumeInfo{Name: "a.etcd-main", Zone: "local-a", SizeGB: 1})
	vols, err := n2.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 1 || vols[0].Holder != nil {
		t.Errorf("the new volume: %+v, want one without a holder", vols)
	}
	mustAttach(t, n2, "a.etcd-main")
}

// RemoveNodeLock leaves the lock of a node whose protokube runs, and removes it once none does.
func TestRemoveNodeLock(t *testing.T) {
	p, err := NewPool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.LockNode("n1")
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := p.RemoveNodeLock("n1"); err != nil || removed {
		t.Errorf("RemoveNodeLock of a held lock: %v, %v; want it left", removed, err)
	}
	f.Close()
	if removed, err := p.RemoveNodeLock("n1"); err != nil || !removed {
		t.Errorf("RemoveNodeLock of a free lock: %v, %v; want it removed", removed, err)
	}
	if _, err := os.Stat(f.Name()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file: %v, want it gone", err)
	}
	if removed, err := p.RemoveNodeLock("n1"); err != nil || removed {
		t.Errorf("RemoveNodeLock of no lock: %v, %v", removed, err)
	}
}

// DeleteOwned checks and deletes under the pool's lock, the one protokube attaches under: while another process
// holds it (a protokube round), the delete waits, and one that gives up deletes nothing.
func TestDeleteOwnedTakesThePoolLock(t *testing.T) {
	m := newMachine(t)
	c := heldCloud(t, m)
	other, err := NewPool(m.dir) // another process's view of the pool
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := other.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	before := poolFiles(t, m.dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.DeleteOwned(ctx, "demo.example.com", nil, false)
	if err == nil || !strings.Contains(err.Error(), "waiting for the volume pool lock on "+m.dir) {
		t.Errorf("DeleteOwned while another holds the pool's lock: %v, want it to wait for the lock", err)
	}
	if diff := cmp.Diff(before, poolFiles(t, m.dir)); diff != "" {
		t.Errorf("the delete changed the pool (-before +after):\n%s", diff)
	}
}
