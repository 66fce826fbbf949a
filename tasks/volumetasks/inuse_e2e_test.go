//go:build e2e

package volumetasks

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestDevicesInUseE2E: a real block device (a loop device with ext4), asked about by a link to it (as the NVMe
// link of an EBS volume) and mounted through another device node of the same number, so that only the device
// number tells: DevicesInUse names the mount point and says the device is held exclusively. Unmounted, nothing
// uses it.
func TestDevicesInUseE2E(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "mkfs.ext4", "mount", "umount")
	dev := e2e.LoopDevice(t, 64<<20)
	e2e.MustRun(t, "mkfs.ext4", "-q", dev)
	dir := t.TempDir()
	link := filepath.Join(dir, "by-id", "nvme-vol")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(dir, "alias")
	if err := unix.Mknod(alias, unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	e2e.Unmount(t, mp)
	e2e.MustRun(t, "mount", alias, mp)

	use, found, err := DevicesInUse(ProcMountTable, []string{link})
	if err != nil || !slices.Equal(found, []string{link}) || !slices.Equal(use.Mounts, []string{mp + " (" + alias + ")"}) || !use.Busy {
		t.Errorf("mounted: %+v, %v, %v; want mounted at %s, busy, found %s", use, found, err, mp, link)
	}
	e2e.MustRun(t, "umount", mp)
	use, _, err = DevicesInUse(ProcMountTable, []string{link})
	if err != nil || use.InUse() {
		t.Errorf("unmounted: %+v, %v; want not in use", use, err)
	}
}
