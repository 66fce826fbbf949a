package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
			if !mounted(mountPoint) {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := Run(ctx, "umount", mountPoint)
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

// WaitUnused waits, up to 30s, until nothing holds the block device dev (an exclusive open succeeds), and fails t
// after that. After an unmount the device may stay busy a moment: a mount namespace that another process made
// while dev was mounted (ip netns exec, unshare, a test running beside this one) keeps its copy of the mount
// until that process ends. kubeup refuses to hand a busy device to another node, so a test that unmounts and then
// moves the volume waits for this first.
func WaitUnused(t testing.TB, dev string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fd, err := syscall.Open(dev, syscall.O_RDONLY|syscall.O_EXCL|syscall.O_CLOEXEC, 0)
		if err == nil {
			syscall.Close(fd)
			return
		}
		if err != syscall.EBUSY || time.Now().After(deadline) {
			t.Fatalf("%s is still in use 30s after it was unmounted (%v): findmnt --source %s, and the mount namespaces of running processes", dev, err, dev)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SharedMounts makes dir a mount point of its own whose mounts propagate (dir bound on itself, made rshared),
// until t's cleanup. The host's root mount may be private (this machine's is): then every mount namespace a
// process makes copies the mounts under dir, and keeps them, and the devices behind them busy, until it ends,
// whatever the host unmounts; `ip netns exec` makes one for each command it runs (another test's `kubeup
// validate --wait` lasts minutes), and kubeup refuses to release a busy device. Under a shared mount, the host's
// unmounts reach those copies (ip netns exec makes its copy a slave). Call it before the mounts under dir, and
// register their unmounts after it: its own unmount comes after theirs.
func SharedMounts(t testing.TB, dir string) {
	t.Helper()
	RequireRoot(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Clean(dir)
	unreg := register(t, record{Kind: kindMount, Path: dir})
	t.Cleanup(func() {
		defer unreg()
		defer sharedMountDirs.Delete(dir)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := Run(ctx, "umount", dir); err != nil {
			t.Errorf("unmounting the shared mount %s: %v", dir, err)
		}
	})
	sharedMountDirs.Store(dir, true)
	MustRun(t, "mount", "--bind", dir, dir)
	MustRun(t, "mount", "--make-rshared", dir)
}

// sharedMountDirs holds the directories SharedMounts bound on themselves: those mounts are no volume's, and the
// mount checks leave them out (each is the host's file system, at a node's root).
var sharedMountDirs sync.Map
