package localtasks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// writeDeviceSidecar writes, as an operator does by hand, the sidecar of a device volume in pool dir.
func writeDeviceSidecar(t *testing.T, dir, name, device string, sizeGB int32, tags string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if tags == "" {
		tags = "{}"
	}
	js := `{"name": "` + name + `", "zone": "local-a", "sizeGB": ` + strings.TrimSpace(strings.Repeat(" ", 0)) +
		itoa(sizeGB) + `, "volumeType": "device", "device": "` + device + `", "tags": ` + tags + `}`
	if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// fakeDisk is a "bare-metal disk" for unit tests: a file with data, named through a by-id symlink.
func fakeDisk(t *testing.T) (link, file string) {
	t.Helper()
	dir := t.TempDir()
	file = filepath.Join(dir, "sdb")
	if err := os.WriteFile(file, []byte("the disk's data"), 0o600); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, "ata-DISK_1")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	return link, file
}

// anyFile is the blockDevice check of unit tests: a temporary file stands for a block device.
func anyFile(path string) (string, error) {
	dev, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return dev, nil
}

func deviceNode(t *testing.T, m *machine, id string, lease time.Duration) *Volumes {
	t.Helper()
	v := m.node(t, id, lease)
	v.blockDevice = anyFile
	return v
}

func TestDeviceVolumeAttach(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t)
	link, file := fakeDisk(t)
	writeDeviceSidecar(t, m.dir, "disk", link, 1, `{"k8s.io/etcd/main": "disk"}`)
	a, b := deviceNode(t, m, "node-a", time.Minute), deviceNode(t, m, "node-b", time.Minute)

	dev := mustAttach(t, a, "disk")
	if dev != file || m.loops.attaches != 0 {
		t.Fatalf("Attach gave %s after %d losetups, want the device %s itself and none", dev, m.loops.attaches, file)
	}
	if again := mustAttach(t, a, "disk"); again != dev {
		t.Errorf("a second Attach gave %s, want %s", again, dev)
	}
	if got := attached(t, a, "disk"); got != dev {
		t.Errorf("Attached = %q, want %q", got, dev)
	}
	if got := attached(t, b, "disk"); got != "" {
		t.Errorf("node-b sees node-a's device attached at %q", got)
	}
	_, err := b.Attach(ctx, "disk")
	wantHeld(t, err, "disk", "node-a")
	vols, err := b.List(ctx, nil)
	if err != nil || len(vols) != 1 || vols[0].Holder == nil || vols[0].Holder.NodeID != "node-a" {
		t.Errorf("List: %+v, %v; want disk held by node-a", vols, err)
	}
	if err := a.Renew(ctx, []string{"disk"}); err != nil {
		t.Errorf("Renew: %v", err)
	}

	// In use (mounted by node-a): no Detach, no takeover after the lease, no Release.
	m.loops.setBusy(dev, true)
	if err := a.Detach(ctx, "disk"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Detach of a mounted device: %v, want a refusal", err)
	}
	m.clock.add(time.Hour)
	_, err = b.Attach(ctx, "disk")
	if err == nil || engine.ClassOf(err) != engine.ClassTerminal ||
		!strings.Contains(err.Error(), "claiming volume disk: it is attached as "+dev+" (claimed by node node-a) and in use") {
		t.Errorf("takeover of a mounted device: %v, want a terminal refusal", err)
	}
	if c, _ := b.pool.readClaim("disk"); c == nil || c.NodeID != "node-a" {
		t.Errorf("claim after the refused takeover: %+v, want node-a's", c)
	}
	if err := b.Release(ctx, "disk"); err == nil || !strings.Contains(err.Error(), "releasing volume disk: it is attached as "+dev) {
		t.Errorf("Release of a mounted device: %v, want a refusal", err)
	}

	// Unmounted: the expired claim moves to node-b, on the same device; nothing is bound, the data is there.
	m.loops.setBusy(dev, false)
	if got := mustAttach(t, b, "disk"); got != dev || m.loops.attaches != 0 {
		t.Errorf("takeover gave %s after %d losetups, want %s and none", got, m.loops.attaches, dev)
	}
	if got := attached(t, a, "disk"); got != "" {
		t.Errorf("node-a still sees the device at %q", got)
	}
	if err := b.Release(ctx, "disk"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "disk.claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("claim left after Release: %v", err)
	}
	mustAttach(t, a, "disk")
	if err := a.Detach(ctx, "disk"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "disk.claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("claim left after Detach: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "the disk's data" {
		t.Errorf("the device after all that: %q, %v", b, err)
	}
	if _, err := os.Stat(m.img("disk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an image was made for a device volume: %v", err)
	}
}

// A released device (no claim) in use by someone is not claimed either.
func TestDeviceVolumeFreeButInUse(t *testing.T) {
	m := newMachine(t)
	link, file := fakeDisk(t)
	writeDeviceSidecar(t, m.dir, "disk", link, 1, "")
	m.loops.setBusy(file, true)
	_, err := deviceNode(t, m, "node-a", time.Minute).Attach(context.Background(), "disk")
	if err == nil || !strings.Contains(err.Error(), "it is attached as "+file+" (without a claim) and in use") {
		t.Errorf("Attach of a device in use: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "disk.claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a claim was written: %v", err)
	}
}

func TestDeviceVolumeBadDevice(t *testing.T) {
	m := newMachine(t)
	writeDeviceSidecar(t, m.dir, "gone", "/dev/disk/by-id/kubeup-test-no-such-disk", 1, "")
	writeDeviceSidecar(t, m.dir, "chr", "/dev/null", 1, "")
	a := m.node(t, "node-a", time.Minute) // the real check
	b := deviceNode(t, m, "node-b", time.Minute)
	for _, tt := range []struct{ id, want string }{
		{"gone", "device /dev/disk/by-id/kubeup-test-no-such-disk: "},
		{"chr", "device /dev/null (/dev/null) is not a block device"},
	} {
		_, err := a.Attach(context.Background(), tt.id)
		if err == nil || engine.ClassOf(err) != engine.ClassTerminal || !strings.Contains(err.Error(), tt.want) ||
			!strings.Contains(err.Error(), filepath.Join(m.dir, tt.id+".json")) {
			t.Errorf("Attach %s: %v, want a terminal error with %q naming the sidecar", tt.id, err, tt.want)
		}
		if _, err := os.Stat(filepath.Join(m.dir, tt.id+".claim")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a claim of %s, whose device is not there: %v", tt.id, err)
		}
	}
	// A claim of a device that went away (a disk pulled) can be released: nothing uses it.
	if err := b.pool.writeClaim("gone", &claimRecord{NodeID: "node-b"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Detach(context.Background(), "gone"); err != nil {
		t.Errorf("Detach of a device that is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "gone.claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("claim left: %v", err)
	}
}

func TestDeviceSidecarChecks(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct{ name, json, want string }{
		{"relative", `{"name": "v", "zone": "z", "sizeGB": 1, "volumeType": "device", "device": "sdb"}`,
			`device "sdb" is not an absolute path`},
		{"wrong type", `{"name": "v", "zone": "z", "sizeGB": 1, "volumeType": "sparse", "device": "/dev/sdb"}`,
			`names device /dev/sdb but its volumeType is "sparse": set volumeType to "device"`},
		{"no device", `{"name": "v", "zone": "z", "sizeGB": 1, "volumeType": "device"}`,
			`has volumeType "device" but no device`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t)
			if err := os.MkdirAll(p.Dir(), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p.sidecarPath("v"), []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := p.Get(ctx, "v")
			checkErr(t, "Get", err, tt.want)
		})
	}
	p := newPool(t)
	err := p.Create(ctx, VolumeInfo{Name: "v", Zone: "z", SizeGB: 1, VolumeType: VolumeTypeDevice, Device: "/dev/sdb"})
	checkErr(t, "Create", err, "kubeup never makes a device volume (/dev/sdb)")
}

// The pool keeps a device volume's device: Get and List find it without an image, SetTags keeps the device, Grow
// is refused and Delete removes only the sidecar.
func TestDevicePool(t *testing.T) {
	ctx := context.Background()
	p := newPool(t)
	link, file := fakeDisk(t)
	writeDeviceSidecar(t, p.Dir(), "disk", link, 2, `{"a": "1"}`)
	want := &VolumeInfo{Name: "disk", Zone: "local-a", SizeGB: 2, VolumeType: VolumeTypeDevice, Device: link,
		Tags: map[string]string{"a": "1"}}
	got, err := p.Get(ctx, "disk")
	if err != nil || !cmp.Equal(want, got) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
	}
	if err := p.SetTags(ctx, "disk", map[string]string{"b": "2"}); err != nil {
		t.Fatal(err)
	}
	list, err := p.List(ctx, map[string]string{"b": "2"})
	want.Tags = map[string]string{"b": "2"}
	if err != nil || len(list) != 1 || !cmp.Equal(*want, list[0]) {
		t.Errorf("List after SetTags = %+v, %v; want [%+v]", list, err, want)
	}
	err = p.Grow(ctx, "disk", 3)
	checkErr(t, "Grow", err, "kubeup never grows a device: set sizeGB in "+p.sidecarPath("disk"))
	if engine.ClassOf(err) != engine.ClassTerminal {
		t.Errorf("Grow: %v is not terminal", err)
	}
	if err := p.Delete(ctx, "disk"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.sidecarPath("disk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sidecar left after Delete: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "the disk's data" {
		t.Errorf("the device after Delete: %q, %v; want it and its data intact", b, err)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the device's link after Delete: %v", err)
	}
}

// kubeup update finds a device volume as existing and manages its tags; a size it does not have is a terminal
// error naming the sidecar; kubeup delete cluster leaves the device.
func TestDeviceVolumeTask(t *testing.T) {
	ctx := context.Background()
	c := newCloud(t)
	link, file := fakeDisk(t)
	writeDeviceSidecar(t, c.Pool.Dir(), "disk", link, 5, "")
	task := Volume{Name: "disk", Zone: ptr("local-a"), SizeGB: ptr[int32](5), VolumeType: ptr(VolumeTypeSparse),
		Tags: map[string]string{ClusterTag("demo.example.com"): "owned"}}
	report, err := dryRunReport(t, c, volumeGraph(&task))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report, "Will modify resources:\n  LocalVolume/disk\n    Tags ") || strings.Contains(report, "VolumeType") {
		t.Errorf("dry run of tagging a device volume:\n%s", report)
	}
	enginetest.ApplyThenNoChanges(t, ctx, c, volumeGraph(&task))
	asDevice := task
	asDevice.VolumeType = ptr(VolumeTypeDevice)
	enginetest.ApplyThenNoChanges(t, ctx, c, volumeGraph(&asDevice))
	if info, err := c.Pool.Get(ctx, "disk"); err != nil || info.Device != link || info.VolumeType != VolumeTypeDevice ||
		info.Tags[ClusterTag("demo.example.com")] != "owned" {
		t.Errorf("after tagging: %+v, %v", info, err)
	}

	for _, size := range []int32{4, 6} {
		big := task
		big.SizeGB = ptr(size)
		_, err := engine.Run(ctx, volumeGraph(&big)(), c, engine.Options{Target: engine.Apply})
		checkErr(t, "apply", err, "volume disk is the device "+link+", of 5 GB, and the cluster asks for "+itoa(size)+" GB")
		checkErr(t, "apply", err, c.Pool.sidecarPath("disk"))
		if engine.ClassOf(err) != engine.ClassTerminal {
			t.Errorf("apply: %v is not terminal", err)
		}
	}
	missing := Volume{Name: "other", Zone: ptr("local-a"), SizeGB: ptr[int32](1), VolumeType: ptr(VolumeTypeDevice)}
	_, err = engine.Run(ctx, volumeGraph(&missing)(), c, engine.Options{Target: engine.Apply})
	checkErr(t, "apply", err, `kubeup never makes a device volume: write its sidecar`)

	deleted, err := c.DeleteOwned(ctx, "demo.example.com", nil, false)
	if err != nil || !cmp.Equal(deleted, []string{"LocalVolume/disk"}) {
		t.Errorf("DeleteOwned = %v, %v", deleted, err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "the disk's data" {
		t.Errorf("the device after DeleteOwned: %q, %v", b, err)
	}
}
