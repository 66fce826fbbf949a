//go:build e2e

package nodetasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestMountedAt: MountedAt says that a device is mounted at a mount point only when its own filesystem is,
// whole: not when nothing is, another device is, or a directory of the device's own filesystem is bind-mounted
// there; and the UUID it returns is blkid's (statfs's filesystem id through the mount point matches it).
func TestMountedAt(t *testing.T) {
	n := realNode(t, t.TempDir())
	ctx := context.Background()
	dev, other := e2e.LoopDevice(t, diskSize), e2e.LoopDevice(t, diskSize)
	for _, d := range []string{dev, other} {
		if _, err := e2e.Run(ctx, "mkfs.ext4", "-q", "-F", d); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mp, whole := filepath.Join(dir, "mp"), filepath.Join(dir, "whole")
	for _, d := range []string{mp, whole} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		e2e.Unmount(t, d)
	}
	mounted := func(what string, wantOK bool) {
		t.Helper()
		uuid, ok, err := n.MountedAt(mp, dev)
		switch {
		case err != nil:
			t.Errorf("%s: MountedAt: %v", what, err)
		case ok != wantOK:
			t.Errorf("%s: MountedAt = %v, want %v", what, ok, wantOK)
		case ok && uuid != blkidValue(t, dev, "UUID"):
			t.Errorf("%s: MountedAt's UUID %q, blkid's %q", what, uuid, blkidValue(t, dev, "UUID"))
		}
	}
	run := func(args ...string) {
		t.Helper()
		if _, err := e2e.Run(ctx, args[0], args[1:]...); err != nil {
			t.Fatal(err)
		}
	}

	mounted("nothing mounted", false)
	run("mount", "-t", "ext4", other, mp)
	mounted("another device mounted", false)
	run("umount", mp)
	run("mount", "-t", "ext4", dev, mp)
	mounted("the device mounted", true)
	run("umount", mp)
	run("mount", "-t", "ext4", dev, whole)
	if err := os.Mkdir(filepath.Join(whole, "part"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("mount", "--bind", filepath.Join(whole, "part"), mp)
	mounted("a directory of the device's filesystem bind-mounted", false)
	run("umount", mp)
	run("umount", whole)
	if _, ok, err := n.MountedAt(mp, filepath.Join(dir, "no-such-device")); ok || err != nil {
		t.Errorf("MountedAt of a device that is not there = %v, %v; want false, no error", ok, err)
	}
}
