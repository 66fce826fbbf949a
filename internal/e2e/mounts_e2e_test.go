//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// errRecorder is a testing.TB that records Errorf instead of failing the test.
type errRecorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *errRecorder) Helper() {}
func (r *errRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// secondLoop attaches another loop device over the file behind dev, detached in t.Cleanup.
func secondLoop(t *testing.T, dev string) string {
	t.Helper()
	b, err := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/loop/backing_file")
	if err != nil {
		t.Fatal(err)
	}
	img := strings.TrimSpace(string(b))
	dev2 := strings.TrimSpace(MustRun(t, "losetup", "--find", "--show", img))
	unreg := register(t, record{Kind: kindLoop, Dev: dev2, Path: img})
	t.Cleanup(func() {
		defer unreg()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := Run(ctx, "losetup", "-d", dev2); err != nil {
			t.Errorf("detaching %s: %v", dev2, err)
		}
	})
	return dev2
}

// The watch sees a real filesystem mounted under two node roots, through one loop device or through two over
// the same image, and lets one node mount it twice.
func TestMountsNeverMountedTwiceWatchesTheMountTable(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "losetup", "mkfs.ext4", "mount", "umount")
	for _, tt := range []struct {
		name string
		// second returns what to mount at the second mount point, and its mount options
		second   func(t *testing.T, dev string) (string, string)
		sameRoot bool
		want     string
	}{
		{"twice on one node", func(t *testing.T, dev string) (string, string) { return dev, "rw" }, true, ""},
		{"one device on two nodes", func(t *testing.T, dev string) (string, string) { return dev, "rw" }, false, "is mounted on two nodes at once"},
		{"two loop devices over one image", func(t *testing.T, dev string) (string, string) { return secondLoop(t, dev), "ro,noload" }, false, "loop file "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dev := LoopDevice(t, 32<<20)
			MustRun(t, "mkfs.ext4", "-q", dev)
			a, b := t.TempDir(), t.TempDir()
			at1, at2 := filepath.Join(a, "mnt/v"), filepath.Join(b, "mnt/v")
			if tt.sameRoot {
				at2 = filepath.Join(a, "mnt/w")
			}
			for _, d := range []string{at1, at2} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			rec := &errRecorder{TB: t}
			w := NeverMountedTwice(rec, a, b)
			Unmount(t, at1)
			MustRun(t, "mount", dev, at1)
			second, opts := tt.second(t, dev)
			Unmount(t, at2)
			MustRun(t, "mount", "-o", opts, second, at2)
			// Let the watch look at least twice with both mounts in place.
			for n := w.Checks() + 2; w.Checks() < n; {
				time.Sleep(10 * time.Millisecond)
			}
			w.Stop()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			switch {
			case tt.want == "" && len(rec.errs) > 0:
				t.Errorf("the watch failed the test: %q", rec.errs)
			case tt.want != "" && len(rec.errs) != 1:
				t.Errorf("the watch reported %q, want one failure", rec.errs)
			case tt.want != "" && !(strings.Contains(rec.errs[0], tt.want) && strings.Contains(rec.errs[0], at1) && strings.Contains(rec.errs[0], at2)):
				t.Errorf("the watch reported %q, want %q and both mount points", rec.errs[0], tt.want)
			}
		})
	}
}

// A loop device bound through a mount that is gone (a dead machine's bind mount of the pool) names its file
// from that mount's root in sysfs: its mounts are still found as mounts of the image, by the file's device and
// inode numbers.
func TestMountsOfFileBoundThroughAGoneMount(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "losetup", "mkfs.ext4", "mount", "umount", "unshare")
	pool, through := t.TempDir(), t.TempDir()
	img := filepath.Join(pool, "v.img")
	MustRun(t, "truncate", "-s", "32M", img)
	DetachLoopsOf(t, img)
	// The mount namespace, and its bind mount of the pool, end with unshare.
	dev := strings.TrimSpace(MustRun(t, "unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" "$2" && losetup --find --show "$2/v.img"`, "sh", pool, through))
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	majmin := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	if got := loopBacking(majmin); !strings.HasPrefix(got, "/v.img (device:inode ") {
		t.Errorf("loopBacking(%s) before the image was named: %q, want sysfs's /v.img with its device and inode", majmin, got)
	}
	MustRun(t, "mkfs.ext4", "-q", dev)
	at := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(at, 0o755); err != nil {
		t.Fatal(err)
	}
	Unmount(t, at)
	MustRun(t, "mount", dev, at)
	if got := MountsOfFile(img); len(got) != 1 || got[0] != at {
		t.Errorf("MountsOfFile(%s) = %q, want [%s]", img, got, at)
	}
	if got := loopBacking(majmin); got != img {
		t.Errorf("loopBacking(%s) once the image was named: %q, want %s", majmin, got, img)
	}
}

// A mount under SharedMounts' directory, copied by a mount namespace made while it was there (as `ip netns exec`
// makes one: a slave copy), goes from that copy too when the host unmounts it: the device is free at once.
func TestSharedMountsUnmountReachesCopies(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "losetup", "mkfs.ext4", "mount", "umount", "unshare")
	dev := LoopDevice(t, 32<<20)
	MustRun(t, "mkfs.ext4", "-q", dev)
	root := filepath.Join(t.TempDir(), "node")
	SharedMounts(t, root)
	at := filepath.Join(root, "mnt/v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	Unmount(t, at)
	MustRun(t, "mount", dev, at)
	copier := StartProcess(t, exec.Command("unshare", "--mount", "--propagation", "slave", "sleep", "120"), filepath.Join(t.TempDir(), "copier.log"))
	defer copier.Stop(5 * time.Second)
	// Wait until the copier's namespace exists and holds the mount.
	WaitFor(t, 10*time.Second, "the copier's mount namespace to hold "+at, func() (string, bool) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", copier.Cmd.Process.Pid))
		return string(b), err == nil && strings.Contains(string(b), " "+at+" ")
	})
	MustRun(t, "umount", at)
	fd, err := syscall.Open(dev, syscall.O_RDONLY|syscall.O_EXCL|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("%s is busy after the host unmounted it, though a copy of the mount was made under a shared mount: %v", dev, err)
	}
	syscall.Close(fd)
}
