//go:build e2e

package localtasks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// backingFile is what the kernel says loop device dev is bound to: "PATH", or "PATH (deleted)" once the image
// was removed from under it.
func backingFile(t *testing.T, dev string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		t.Fatalf("the backing file of %s: %v", dev, err)
	}
	return strings.TrimSpace(string(b))
}

// On real loop devices: a volume a node holds, mounted, is refused by the delete and left intact (its image in
// place, its loop device still bound to it, not to a deleted file); once unmounted and unbound, with its lease
// run out, it is deleted with its claim; a volume created again under its name is nobody's.
func TestDeleteOwnedHeldVolumeE2E(t *testing.T) {
	ctx := context.Background()
	m := realMachine(t)
	c := heldCloud(t, m)
	c.loops, c.mounts = losetup{}, nil
	img := m.img("a.etcd-main")
	e2e.DetachLoopsOf(t, img)
	n1 := m.realNode(t, "n1", time.Minute)
	dev := mustAttach(t, n1, "a.etcd-main")
	e2e.MustRun(t, "mkfs.ext4", "-q", dev)
	mp := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	e2e.Unmount(t, mp)
	e2e.MustRun(t, "mount", dev, mp)

	until := m.clock.now().Add(time.Minute).Format(time.DateTime)
	held := "volume a.etcd-main: claimed by node n1 until " + until + " UTC, attached as " + dev + ", mounted at " + mp
	_, err := c.DeleteOwned(ctx, "demo.example.com", nil, true)
	wantHolds(t, err, held)
	_, err = c.DeleteOwned(ctx, "demo.example.com", nil, false)
	wantHolds(t, err, held)
	if !strings.Contains(err.Error(), "umount "+mp) {
		t.Errorf("the refusal does not say to unmount %s: %v", mp, err)
	}
	if got := backingFile(t, dev); got != img {
		t.Errorf("after the refusal, %s is bound to %q, want %s", dev, got, img)
	}
	for _, f := range []string{"a.etcd-main.img", "a.etcd-main.json", "a.etcd-main.claim", "b.etcd-main.img", "b.etcd-main.json"} {
		if _, err := os.Stat(filepath.Join(m.dir, f)); err != nil {
			t.Errorf("after the refusal: %v", err)
		}
	}

	// Unmounted, unbound, its lease run out: nobody holds it, and it goes with its claim.
	e2e.MustRun(t, "umount", mp)
	e2e.WaitUnused(t, dev)
	e2e.MustRun(t, "losetup", "--detach", dev)
	m.clock.add(time.Hour)
	if _, err := c.DeleteOwned(ctx, "demo.example.com", nil, false); err != nil {
		t.Fatal(err)
	}
	if left := poolFiles(t, m.dir); len(left) != 0 {
		t.Errorf("files left in the pool: %v", left)
	}

	// Created again, the volume is nobody's: another node attaches it.
	mustCreate(t, c.Pool, VolumeInfo{Name: "a.etcd-main", Zone: "local-a", SizeGB: 1})
	if _, err := os.Stat(filepath.Join(m.dir, "a.etcd-main.claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the new volume has a claim: %v", err)
	}
	n2 := m.realNode(t, "n2", time.Minute)
	if dev2 := mustAttach(t, n2, "a.etcd-main"); backingFile(t, dev2) != img {
		t.Errorf("node n2's device %s is bound to %q, want %s", dev2, backingFile(t, dev2), img)
	}
}
