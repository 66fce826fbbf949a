//go:build e2e

package nodetasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/e2e"
)

const diskSize = 64 << 20

// realNode is the live machine: root "/", no systemd, cloud disk names resolved through byID.
func realNode(t *testing.T, byID string) *Node {
	t.Helper()
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "blkid", "mkfs.ext4", "mount", "umount")
	n, err := NewNode(context.Background(), "/", NodeOptions{Systemd: SystemdNone, DiskByID: byID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func mountGraph(mp, device string, options ...string) func() *engine.Graph[*Node] {
	return func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		engine.Add(g, &FormatAndMount{MountPoint: mp, Device: device, Options: options})
		return g
	}
}

// mountedDevice returns the source of the mount at mp, "" when nothing is mounted there.
func mountedDevice(t *testing.T, mp string) string {
	t.Helper()
	m, err := mountAt(mp)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil {
		return ""
	}
	return m.Source
}

// blkidValue is `blkid -p -s TAG -o value DEV`; "" when the device holds nothing.
func blkidValue(t *testing.T, dev, tag string) string {
	t.Helper()
	out, err := e2e.Run(context.Background(), "blkid", "-p", "-s", tag, "-o", "value", dev)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

func TestFormatAndMountE2E(t *testing.T) {
	ctx := context.Background()

	t.Run("a blank device is formatted and mounted", func(t *testing.T) {
		n := realNode(t, "")
		dev := e2e.LoopDevice(t, diskSize)
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		applied := enginetest.ApplyThenNoChanges(t, ctx, n, mountGraph(mp, dev, "noatime"))
		if len(applied.Changes) != 1 || applied.Changes[0].Action != engine.Modify {
			t.Errorf("want one change (format and mount), got %+v", applied.Changes)
		}
		if got := blkidValue(t, dev, "TYPE"); got != "ext4" {
			t.Errorf("filesystem %q, want ext4", got)
		}
		m, err := mountAt(mp)
		if err != nil || m == nil || m.Source != dev {
			t.Fatalf("mounted at %s: %+v, %v; want %s", mp, m, err, dev)
		}
		if len(presentOptions([]string{"noatime"}, m)) != 1 {
			t.Errorf("mount options %v lack noatime", m.Options)
		}
		task := &FormatAndMount{MountPoint: mp, Device: dev}
		found, err := task.Find(ctx, n)
		if err != nil || found.UUID == nil || *found.UUID != blkidValue(t, dev, "UUID") {
			t.Errorf("Find's UUID %v (%v), want blkid's %q", found.UUID, err, blkidValue(t, dev, "UUID"))
		}
	})

	t.Run("a device with a filesystem is mounted, not formatted", func(t *testing.T) {
		n := realNode(t, "")
		dev := e2e.LoopDevice(t, diskSize)
		e2e.MustRun(t, "mkfs.ext4", "-q", "-F", dev)
		uuid := blkidValue(t, dev, "UUID")
		scratch := t.TempDir()
		e2e.MustRun(t, "mount", dev, scratch)
		if err := os.WriteFile(filepath.Join(scratch, "member-data"), []byte("etcd data\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e2e.MustRun(t, "umount", scratch)

		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		enginetest.ApplyThenNoChanges(t, ctx, n, mountGraph(mp, dev))
		if got := blkidValue(t, dev, "UUID"); got != uuid {
			t.Errorf("UUID %q, was %q: the device was formatted", got, uuid)
		}
		if b, err := os.ReadFile(filepath.Join(mp, "member-data")); err != nil || string(b) != "etcd data\n" {
			t.Errorf("the file on the device: %q, %v", b, err)
		}
	})

	t.Run("another device at the mount point is refused", func(t *testing.T) {
		n := realNode(t, "")
		other, dev := e2e.LoopDevice(t, diskSize), e2e.LoopDevice(t, diskSize)
		e2e.MustRun(t, "mkfs.ext4", "-q", "-F", other)
		mp := filepath.Join(t.TempDir(), "etcd")
		if err := os.Mkdir(mp, 0o755); err != nil {
			t.Fatal(err)
		}
		e2e.Unmount(t, mp)
		e2e.MustRun(t, "mount", other, mp)

		_, err := engine.Run(ctx, mountGraph(mp, dev)(), n, engine.Options{Target: engine.Apply})
		if err == nil || !strings.Contains(err.Error(), mp+": "+other+" is mounted there, not "+dev) {
			t.Fatalf("want a refusal naming both devices, got %v", err)
		}
		if got := mountedDevice(t, mp); got != other {
			t.Errorf("mounted at %s: %q, want %s still", mp, got, other)
		}
		if got := blkidValue(t, dev, "TYPE"); got != "" {
			t.Errorf("the refused device was formatted: %q", got)
		}
	})

	t.Run("a device with a partition table is refused", func(t *testing.T) {
		n := realNode(t, "")
		dev := e2e.LoopDevice(t, diskSize)
		writeMBR(t, dev)
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		_, err := engine.Run(ctx, mountGraph(mp, dev)(), n, engine.Options{Target: engine.Apply})
		if err == nil || !strings.Contains(err.Error(), "holds a partition table (dos)") {
			t.Fatalf("want a refusal, got %v", err)
		}
		if got := blkidValue(t, dev, "TYPE"); got != "" {
			t.Errorf("the partitioned device was formatted: %q", got)
		}
	})

	t.Run("an EBS volume id resolves through /dev/disk/by-id", func(t *testing.T) {
		byID := t.TempDir()
		n := realNode(t, byID)
		dev := e2e.LoopDevice(t, diskSize)
		if err := os.Symlink(dev, filepath.Join(byID, "nvme-Amazon_Elastic_Block_Store_vol0123456789abcdef0")); err != nil {
			t.Fatal(err)
		}
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		enginetest.ApplyThenNoChanges(t, ctx, n, mountGraph(mp, "vol-0123456789abcdef0"))
		if got := mountedDevice(t, mp); got != dev {
			t.Errorf("mounted at %s: %q, want %s", mp, got, dev)
		}
	})
}

// writeMBR writes a DOS partition table with one partition, as fdisk would.
func writeMBR(t *testing.T, dev string) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mbr := make([]byte, 512)
	copy(mbr[446:], []byte{0, 0, 0, 0, 0x83, 0, 0, 0, 0x00, 0x08, 0, 0, 0x00, 0x50, 0, 0}) // type 83, LBA 2048, 20480 sectors
	mbr[510], mbr[511] = 0x55, 0xaa
	if _, err := f.WriteAt(mbr, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
