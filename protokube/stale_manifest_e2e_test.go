//go:build e2e

package protokube_test

import (
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestNoEtcdManifestOverAnotherFilesystem: a node converged (its etcd manifests written), then its main volume's
// mount point holds another filesystem (unmounted, something else mounted there). The round's FormatAndMount
// refuses the mount point, and the main etcd manifest is removed: the round asked whether anything was mounted
// there, not whether it was this volume, and left the manifest of an earlier round, so that kubelet kept running
// etcd on whatever was mounted there (found by review). The events manifest, whose volume is in place, stays.
// Once the other filesystem is gone, the node converges to the manifests it had.
func TestNoEtcdManifestOverAnotherFilesystem(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "mkfs.ext4", "blkid", "mount", "umount")
	f := newKillFixture(t)
	data := newVolumeData(t, f.pool)
	const ip = "10.99.0.2"
	f.converge(t, ip, data)
	want := f.manifests(t)
	mainManifest, eventsManifest := "etcd-main.manifest", "etcd-events.manifest"
	if want[mainManifest] == "" || want[eventsManifest] == "" {
		t.Fatalf("a converged node has the manifests %v, want %s and %s", slices.Sorted(maps.Keys(want)), mainManifest, eventsManifest)
	}
	var mp string
	for _, m := range e2e.MountsUnder(filepath.Join(f.root, "mnt")) {
		if strings.Contains(filepath.Base(m), ".etcd-main") {
			mp = m
		}
	}
	if mp == "" {
		t.Fatalf("no etcd-main volume mounted under %s: %v", f.root, e2e.MountsUnder(f.root))
	}

	other := e2e.LoopDevice(t, 64<<20)
	for _, args := range [][]string{{"umount", mp}, {"mkfs.ext4", "-q", "-F", other}, {"mount", "-t", "ext4", other, mp}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := exec.Command(filepath.Join(f.bin, "protokube"), f.args(ip, "--once")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), other+" is mounted there") {
		t.Errorf("a round with %s mounted at %s: %v, want it refused, naming it:\n%s", other, mp, err, out)
	}
	got := f.manifests(t)
	if _, ok := got[mainManifest]; ok {
		t.Errorf("%s is still there with %s mounted at its volume's mount point %s: kubelet runs etcd on it", mainManifest, other, mp)
	}
	if got[eventsManifest] != want[eventsManifest] {
		t.Errorf("%s changed (-before +after):\n%s", eventsManifest, cmp.Diff(want[eventsManifest], got[eventsManifest]))
	}

	if out, err := exec.Command("umount", mp).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v\n%s", mp, err, out)
	}
	f.converge(t, ip, data)
	f.check(t, ip, want, data)
}
