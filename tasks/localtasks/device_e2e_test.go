//go:build e2e

package localtasks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// loopsOver returns the loop devices whose backing file is one of files, or under dir: what this test's Volumes
// would have bound.
func loopsOver(t *testing.T, dir string, files ...string) []string {
	t.Helper()
	out := e2e.MustRun(t, "losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE")
	var found []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		back := strings.Join(f[1:], " ")
		if strings.HasPrefix(back, dir+"/") || slices.Contains(files, back) {
			found = append(found, line)
		}
	}
	return found
}

// mountAndRun mounts dev on a fresh mount point, runs f with it, and unmounts it again.
func mountAndRun(t *testing.T, dev string, f func(mp string)) {
	t.Helper()
	mp := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	e2e.Unmount(t, mp)
	e2e.MustRun(t, "mount", dev, mp)
	f(mp)
	e2e.MustRun(t, "umount", mp)
	e2e.WaitUnused(t, dev)
}

// A bare-metal disk (a loop device the test makes) named by a hand-written sidecar: attached as itself, nothing
// bound; held exclusively; handed over only unmounted; left intact by Delete.
func TestDeviceVolumeE2E(t *testing.T) {
	ctx := context.Background()
	m := realMachine(t)
	disk := e2e.LoopDevice(t, 64<<20)
	link := filepath.Join(t.TempDir(), "ata-KUBEUP_TEST_DISK")
	if err := os.Symlink(disk, link); err != nil {
		t.Fatal(err)
	}
	writeDeviceSidecar(t, m.dir, "disk", link, 1, `{"k8s.io/etcd/main": "disk"}`)
	a, b := m.realNode(t, "node-a", time.Minute), m.realNode(t, "node-b", time.Minute)

	dev := mustAttach(t, a, "disk")
	if dev != disk {
		t.Fatalf("Attach gave %s, want the disk %s itself", dev, disk)
	}
	if got := loopsOver(t, m.dir, disk, link); len(got) != 0 {
		t.Errorf("loop devices bound over the pool or the disk: %v", got)
	}
	if got := attached(t, a, "disk"); got != disk {
		t.Errorf("Attached = %q, want %q", got, disk)
	}
	_, err := b.Attach(ctx, "disk")
	wantHeld(t, err, "disk", "node-a")

	// node-a formats and mounts it; while mounted, neither a takeover after the lease nor a release moves it.
	e2e.MustRun(t, "mkfs.ext4", "-q", disk)
	mp := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	e2e.Unmount(t, mp)
	e2e.MustRun(t, "mount", disk, mp)
	if err := os.WriteFile(filepath.Join(mp, "data"), []byte("node-a's data"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.clock.add(time.Hour)
	_, err = b.Attach(ctx, "disk")
	if err == nil || !strings.Contains(err.Error(), "claiming volume disk: it is attached as "+disk+" (claimed by node node-a) and in use") {
		t.Errorf("takeover of a mounted disk: %v, want a refusal", err)
	}
	if err := b.Release(ctx, "disk"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Release of a mounted disk: %v, want a refusal", err)
	}
	if err := a.Detach(ctx, "disk"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Detach of a mounted disk: %v, want a refusal", err)
	}

	// Unmounted and released (node-a died): node-b attaches the same disk, with node-a's data.
	e2e.MustRun(t, "umount", mp)
	e2e.WaitUnused(t, disk)
	if err := b.Release(ctx, "disk"); err != nil {
		t.Fatal(err)
	}
	if got := mustAttach(t, b, "disk"); got != disk {
		t.Errorf("node-b attached %s, want %s", got, disk)
	}
	if got := attached(t, a, "disk"); got != "" {
		t.Errorf("node-a still sees the disk at %q", got)
	}
	mountAndRun(t, disk, func(mp string) {
		if b, err := os.ReadFile(filepath.Join(mp, "data")); err != nil || string(b) != "node-a's data" {
			t.Errorf("node-b reads %q, %v; want node-a's data", b, err)
		}
	})
	if err := b.Detach(ctx, "disk"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "disk.claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("claim left after Detach: %v", err)
	}

	// Deleting the volume removes its sidecar only: the disk and its data stay.
	if err := b.pool.Delete(ctx, "disk"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "disk.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sidecar left after Delete: %v", err)
	}
	mountAndRun(t, disk, func(mp string) {
		if b, err := os.ReadFile(filepath.Join(mp, "data")); err != nil || string(b) != "node-a's data" {
			t.Errorf("after Delete the disk holds %q, %v; want node-a's data", b, err)
		}
	})
	if got := loopsOver(t, m.dir, disk, link); len(got) != 0 {
		t.Errorf("loop devices bound over the pool or the disk: %v", got)
	}
}
