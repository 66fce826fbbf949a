package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// LoopDevice attaches a sparse file of size bytes to a free loop device and returns the device ("/dev/loop3").
// The device is detached in t.Cleanup: unmount what you mounted from it in a cleanup registered after this call
// (cleanups run last-registered first).
func LoopDevice(t testing.TB, size int64) string {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "losetup")
	dir, err := os.MkdirTemp("", "kubeup-e2e-loop-")
	if err != nil {
		t.Fatal(err)
	}
	unregDir := register(t, record{Kind: kindDir, Path: dir})
	t.Cleanup(func() {
		os.RemoveAll(dir)
		unregDir()
	})
	img := filepath.Join(dir, "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dev := strings.TrimSpace(MustRun(t, "losetup", "--find", "--show", img))
	unregLoop := register(t, record{Kind: kindLoop, Dev: dev, Path: img})
	t.Cleanup(func() {
		defer unregLoop()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := Run(ctx, "losetup", "-d", dev); err != nil {
			t.Errorf("detaching %s: %v", dev, err)
		}
	})
	return dev
}

// Unmount registers the unmount of mountPoint in t.Cleanup, for a test that mounts there. Nothing mounted is
// fine.
func Unmount(t testing.TB, mountPoint string) {
	t.Helper()
	unreg := register(t, record{Kind: kindMount, Path: mountPoint})
	t.Cleanup(func() {
		defer unreg()
		for {
			b, err := os.ReadFile("/proc/self/mountinfo")
			if err != nil || !strings.Contains(string(b), " "+mountPoint+" ") {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err = Run(ctx, "umount", mountPoint)
			cancel()
			if err != nil {
				t.Errorf("unmounting %s: %v", mountPoint, err)
				return
			}
		}
	})
}

// DetachLoopsOf registers in t.Cleanup the detach of every loop device bound to img, for a test whose code
// attaches it (protokube's local volumes); the record lets the next run detach them if this test process dies
// first. Register it before the mounts over those devices (Unmount), so that it runs after them.
func DetachLoopsOf(t testing.TB, img string) {
	t.Helper()
	unreg := register(t, record{Kind: kindLoop, Path: img})
	t.Cleanup(func() {
		defer unreg()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := Run(ctx, "losetup", "--noheadings", "--output", "NAME", "-j", img)
		if err != nil {
			t.Errorf("listing the loop devices of %s: %v", img, err)
			return
		}
		for _, dev := range strings.Fields(out) {
			if _, err := Run(ctx, "losetup", "-d", dev); err != nil {
				t.Errorf("detaching %s (%s): %v", dev, img, err)
			}
		}
	})
}
