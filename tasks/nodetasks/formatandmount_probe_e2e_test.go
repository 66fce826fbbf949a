//go:build e2e

package nodetasks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/e2e"
)

// probeCounter puts a blkid first on PATH that logs the device it is asked about and runs the real one; count
// says how many times it ran since the last count.
func probeCounter(t *testing.T) (count func() int) {
	t.Helper()
	real, err := exec.LookPath("blkid")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "probes")
	blkidWrapper(t, `echo "$dev" >> '`+log+`'; exec '`+real+`' "$@"`)
	seen := 0
	return func() int {
		b, err := os.ReadFile(log)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "\n")
		defer func() { seen = n }()
		return n - seen
	}
}

// TestFormatAndMountProbes: Find runs no blkid for a device the kernel has mounted at the mount point with the
// expected filesystem (what every protokube round sees), and still reports its filesystem and blkid's UUID; every
// other case is probed, and a format is always preceded by Render's own probe.
func TestFormatAndMountProbes(t *testing.T) {
	ctx := context.Background()
	ext4 := func(t *testing.T, dev string) { e2e.MustRun(t, "mkfs.ext4", "-q", "-F", dev) }
	mountAtDir := func(t *testing.T, dev, dir string) {
		e2e.Unmount(t, dir)
		e2e.MustRun(t, "mount", dev, dir)
	}
	for _, tt := range []struct {
		name   string
		fsType string
		// setup prepares dev and the mount point mp.
		setup     func(t *testing.T, dev, mp string)
		wantProbe bool
	}{
		{name: "ext4 mounted at the mount point", fsType: "ext4", setup: func(t *testing.T, dev, mp string) {
			ext4(t, dev)
			mountAtDir(t, dev, mp)
		}},
		{name: "ext4, not mounted", fsType: "ext4", setup: func(t *testing.T, dev, mp string) { ext4(t, dev) }, wantProbe: true},
		{name: "blank", fsType: "ext4", setup: func(t *testing.T, dev, mp string) {}, wantProbe: true},
		{name: "ext4 mounted elsewhere", fsType: "ext4", setup: func(t *testing.T, dev, mp string) {
			ext4(t, dev)
			mountAtDir(t, dev, t.TempDir())
		}, wantProbe: true},
		{name: "another device mounted at the mount point", fsType: "ext4", setup: func(t *testing.T, dev, mp string) {
			ext4(t, dev)
			other := e2e.LoopDevice(t, diskSize)
			ext4(t, other)
			mountAtDir(t, other, mp)
		}, wantProbe: true},
		{name: "mounted at the mount point, another type expected", fsType: "ext3", setup: func(t *testing.T, dev, mp string) {
			ext4(t, dev)
			mountAtDir(t, dev, mp)
		}, wantProbe: true},
		{name: "mounted at the mount point, a type without the shortcut", fsType: "xfs", setup: func(t *testing.T, dev, mp string) {
			ext4(t, dev)
			mountAtDir(t, dev, mp)
		}, wantProbe: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := realNode(t, "")
			dev := e2e.LoopDevice(t, diskSize)
			mp := filepath.Join(t.TempDir(), "etcd")
			if err := os.Mkdir(mp, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dev, mp)
			uuid := blkidValue(t, dev, "UUID")
			probes := probeCounter(t)
			task := &FormatAndMount{MountPoint: mp, Device: dev, FSType: &tt.fsType}
			found, err := task.Find(ctx, n)
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			if got := probes(); (got > 0) != tt.wantProbe {
				t.Errorf("Find ran blkid %d times; want a probe: %v", got, tt.wantProbe)
			}
			gotUUID := ""
			if found.UUID != nil {
				gotUUID = *found.UUID
			}
			if gotUUID != uuid {
				t.Errorf("Find's UUID %q, want blkid's %q", gotUUID, uuid)
			}
		})
	}

	t.Run("a format follows Render's own probe", func(t *testing.T) {
		n := realNode(t, "")
		dev := e2e.LoopDevice(t, diskSize)
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		probes := probeCounter(t)
		g := engine.NewGraph[*Node]()
		engine.Add(g, &FormatAndMount{MountPoint: mp, Device: dev})
		if _, err := engine.Run(ctx, g, n, engine.Options{Target: engine.Apply}); err != nil {
			t.Fatal(err)
		}
		// Find's probe, Render's before mkfs and Render's after it.
		if got := probes(); got < 3 {
			t.Errorf("formatting ran blkid %d times, want at least 3 (Find, Render before and after mkfs)", got)
		}
		enginetest.ApplyThenNoChanges(t, ctx, n, mountGraph(mp, dev))
		if got := probes(); got != 0 {
			t.Errorf("runs of the mounted device ran blkid %d times, want none", got)
		}
	})
}
