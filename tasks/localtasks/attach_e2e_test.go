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

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// realMachine is a pool of volumes on this machine, attached with the real losetup. Every loop device bound to
// one of its images is unbound at cleanup (by the image, which is the test's own), after the mounts the test
// registers later are undone.
func realMachine(t *testing.T, volumes ...string) *machine {
	t.Helper()
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "mkfs.ext4", "mount", "umount")
	m := newMachine(t, volumes...)
	m.loops = nil
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, name := range volumes {
			devs, err := losetup{}.bound(ctx, m.img(name))
			if err != nil {
				t.Errorf("listing the loop devices of %s: %v", name, err)
				continue
			}
			for _, dev := range devs {
				if _, err := e2e.Run(ctx, "losetup", "--detach", dev); err != nil {
					t.Errorf("detaching %s: %v", dev, err)
				}
			}
		}
	})
	return m
}

// realNode is a node of realMachine: its Volumes attach with losetup.
func (m *machine) realNode(t *testing.T, id string, lease time.Duration) *Volumes {
	t.Helper()
	v := m.node(t, id, lease)
	v.loops = losetup{}
	return v
}

func losetupBound(t *testing.T, img string) []string {
	t.Helper()
	devs, err := losetup{}.bound(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

func TestVolumesLoopE2E(t *testing.T) {
	ctx := context.Background()
	m := realMachine(t, "a.etcd-main")
	a, b := m.realNode(t, "node-a", time.Minute), m.realNode(t, "node-b", time.Minute)
	img := m.img("a.etcd-main")

	dev := mustAttach(t, a, "a.etcd-main")
	if got := losetupBound(t, img); len(got) != 1 || got[0] != dev {
		t.Fatalf("losetup lists %v bound to the image, want [%s]", got, dev)
	}
	if fi, err := os.Stat(dev); err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Fatalf("%s is not a device: %v", dev, err)
	}
	if again := mustAttach(t, a, "a.etcd-main"); again != dev || len(losetupBound(t, img)) != 1 {
		t.Errorf("a second Attach gave %s, with %v bound; want %s alone", again, losetupBound(t, img), dev)
	}
	if got := attached(t, a, "a.etcd-main"); got != dev {
		t.Errorf("Attached = %q, want %q", got, dev)
	}
	_, err := b.Attach(ctx, "a.etcd-main")
	wantHeld(t, err, "a.etcd-main", "node-a")

	// Mounted, the device is in use: neither Detach nor a takeover after the lease expired unbinds it.
	e2e.MustRun(t, "mkfs.ext4", "-q", dev)
	mp := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	e2e.Unmount(t, mp)
	e2e.MustRun(t, "mount", dev, mp)
	if err := a.Detach(ctx, "a.etcd-main"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Detach of a mounted volume: %v, want a refusal", err)
	}
	m.clock.add(time.Hour)
	_, err = b.Attach(ctx, "a.etcd-main")
	if err == nil || !strings.Contains(err.Error(), "claiming volume a.etcd-main: it is attached as "+dev+" (claimed by node node-a) and in use") {
		t.Errorf("takeover of a mounted volume: %v, want a refusal", err)
	}
	if err := b.Release(ctx, "a.etcd-main"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Release of a mounted volume: %v, want a refusal", err)
	}
	if got := losetupBound(t, img); len(got) != 1 || got[0] != dev {
		t.Fatalf("after the refusals, %v bound; want [%s]", got, dev)
	}

	// Unmounted, the expired claim moves to node-b, on a device of its own; node-a's is unbound.
	e2e.MustRun(t, "umount", mp)
	e2e.WaitUnused(t, dev)
	devB := mustAttach(t, b, "a.etcd-main")
	if got := losetupBound(t, img); len(got) != 1 || got[0] != devB {
		t.Errorf("after the takeover, %v bound; want [%s]", got, devB)
	}
	if got := attached(t, a, "a.etcd-main"); got != "" {
		t.Errorf("node-a still sees the volume at %q", got)
	}
	if out := e2e.MustRun(t, "blkid", "-p", "-s", "TYPE", "-o", "value", devB); strings.TrimSpace(out) != "ext4" {
		t.Errorf("node-b's device holds %q, want node-a's ext4", out)
	}

	if err := b.Detach(ctx, "a.etcd-main"); err != nil {
		t.Fatal(err)
	}
	if got := losetupBound(t, img); len(got) != 0 {
		t.Errorf("after Detach, %v bound; want none", got)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "a.etcd-main.claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("claim left after Detach: %v", err)
	}
}

// The volumetasks.Attach task on real loop devices: apply, then no changes; the device it reports is the one
// losetup lists.
func TestVolumesAttachTaskE2E(t *testing.T) {
	ctx := context.Background()
	m := realMachine(t, "v")
	w := volumesWorld{m.realNode(t, "node-a", time.Minute)}
	var task *volumetasks.Attach[volumesWorld]
	enginetest.ApplyThenNoChanges(t, ctx, w, func() *engine.Graph[volumesWorld] {
		g := engine.NewGraph[volumesWorld]()
		task = engine.Add(g, &volumetasks.Attach[volumesWorld]{VolumeID: "v"})
		return g
	})
	dev := task.AttachedDevice()
	if got := losetupBound(t, m.img("v")); dev == "" || len(got) != 1 || got[0] != dev {
		t.Errorf("the task reports device %q, losetup lists %v", dev, got)
	}
}
