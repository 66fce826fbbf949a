//go:build e2e

package nodetasks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// round is the world of a protokube round in miniature: the node, and its view of the volumes.
type round struct {
	node *Node
	vols *localtasks.Volumes
}

// newRound is the round of a node whose volumes are vols: its mounts journal their formats and confirm the
// hold through vols, as protokube's do (NodeOptions).
func newRound(t *testing.T, vols *localtasks.Volumes) *round {
	t.Helper()
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "blkid", "mkfs.ext4", "mount", "umount")
	n, err := NewNode(context.Background(), "/", NodeOptions{Systemd: SystemdNone, FormatJournal: vols, MountGuard: vols})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return &round{node: n, vols: vols}
}

func (r *round) Node() *Node                          { return r.node }
func (r *round) Volumes() volumetasks.World           { return r }
func (r *round) VolumeProvider() volumetasks.Provider { return r.vols }

// claimAndMount is the graph of a round: attach the volume, then format it if blank and mount it.
func claimAndMount(volume, mp string) func() *engine.Graph[*round] {
	return func() *engine.Graph[*round] {
		g := engine.NewGraph[*round]()
		att := engine.AddIn(g, (*round).Volumes, &volumetasks.Attach[volumetasks.World]{VolumeID: volume})
		engine.AddIn(g, (*round).Node, &FormatAndMount{MountPoint: mp, Attachment: att, Volume: volume, Options: []string{"noatime"}})
		return g
	}
}

// A pool volume attached as a loop device by volumetasks.Attach and mounted by FormatAndMount from the device
// the attachment reports: formatted once, never mounted by a second node while the first holds it, and mounted
// with its data, unformatted, by the node that gets it next.
func TestFormatAndMountAttachmentE2E(t *testing.T) {
	ctx := context.Background()
	pool, err := localtasks.NewPool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Create(ctx, localtasks.VolumeInfo{Name: "v", Zone: "local-a", SizeGB: 1, VolumeType: localtasks.VolumeTypeSparse}); err != nil {
		t.Fatal(err)
	}
	img, _ := pool.ImagePath("v")
	t.Cleanup(func() { // after the unmounts registered below
		for _, dev := range boundTo(t, img) {
			if _, err := e2e.Run(context.Background(), "losetup", "--detach", dev); err != nil {
				t.Errorf("detaching %s: %v", dev, err)
			}
		}
	})
	a := newRound(t, localtasks.NewVolumes(pool, volumetasks.Holder{NodeID: "node-a", InternalIP: "10.0.0.1"}, time.Minute))
	b := newRound(t, localtasks.NewVolumes(pool, volumetasks.Holder{NodeID: "node-b", InternalIP: "10.0.0.2"}, time.Minute))
	mpA, mpB := filepath.Join(t.TempDir(), "master-v-a"), filepath.Join(t.TempDir(), "master-v-b")
	e2e.Unmount(t, mpA)
	e2e.Unmount(t, mpB)

	// The dry run cannot look at a device not attached yet: it announces a create, which the apply makes as a
	// modify of the blank device it then finds (a format and a mount). Then nothing is left to change.
	if got := changes(t, ctx, a, claimAndMount("v", mpA), engine.DryRun); got != "create FormatAndMount/"+mpA+", create VolumeAttach/v" {
		t.Errorf("first dry run: %s", got)
	}
	if got := changes(t, ctx, a, claimAndMount("v", mpA), engine.Apply); got != "create VolumeAttach/v, modify FormatAndMount/"+mpA {
		t.Errorf("apply: %s", got)
	}
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		if got := changes(t, ctx, a, claimAndMount("v", mpA), target); got != "" {
			t.Errorf("%s after the apply: %s, want no changes", target, got)
		}
	}
	devA, err := a.vols.Attached(ctx, "v")
	if err != nil || devA == "" {
		t.Fatalf("node-a's device: %q, %v", devA, err)
	}
	if src := mountedDevice(t, mpA); src != devA {
		t.Fatalf("%s has %q mounted, want %s", mpA, src, devA)
	}
	uuid := blkidValue(t, devA, "UUID")
	if err := os.WriteFile(filepath.Join(mpA, "member"), []byte("etcd-a"), 0o644); err != nil {
		t.Fatal(err)
	}

	// node-b is refused while node-a holds it: the attach fails naming node-a, the mount is skipped.
	_, err = engine.Run(ctx, claimAndMount("v", mpB)(), b, engine.Options{Target: engine.Apply})
	var re *engine.RunError
	if !errors.Is(err, volumetasks.ErrHeld) || !errors.As(err, &re) || len(re.Skipped) != 1 ||
		!strings.Contains(err.Error(), "held by node node-a (10.0.0.1)") {
		t.Fatalf("node-b's round: %v; want VolumeAttach/v failed as held by node-a, the mount skipped", err)
	}
	if src := mountedDevice(t, mpB); src != "" {
		t.Fatalf("node-b mounted %s at %s", src, mpB)
	}

	// node-a lets it go; node-b gets it, on a device of its own, and mounts it with node-a's data, unformatted.
	e2e.MustRun(t, "umount", mpA)
	e2e.WaitUnused(t, devA)
	if err := a.vols.Detach(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if got := changes(t, ctx, b, claimAndMount("v", mpB), engine.Apply); got != "create VolumeAttach/v, modify FormatAndMount/"+mpB {
		t.Errorf("node-b's apply: %s", got)
	}
	if got := changes(t, ctx, b, claimAndMount("v", mpB), engine.DryRun); got != "" {
		t.Errorf("node-b's dry run after the apply: %s, want no changes", got)
	}
	devB, err := b.vols.Attached(ctx, "v")
	if err != nil || devB == "" {
		t.Fatalf("node-b's device: %q, %v", devB, err)
	}
	if src := mountedDevice(t, mpB); src != devB {
		t.Fatalf("%s has %q mounted, want %s", mpB, src, devB)
	}
	if got := blkidValue(t, devB, "UUID"); got != uuid {
		t.Errorf("filesystem UUID %q after the hand-over, want %q: the volume was reformatted", got, uuid)
	}
	if data, err := os.ReadFile(filepath.Join(mpB, "member")); err != nil || string(data) != "etcd-a" {
		t.Errorf("node-a's file on node-b's mount: %q, %v", data, err)
	}
	if bound := boundTo(t, img); len(bound) != 1 || bound[0] != devB {
		t.Errorf("loop devices over the image: %v, want only node-b's %s", bound, devB)
	}
}

// changes runs a round and returns its changes as "ACTION KEY, ...", sorted.
func changes(t *testing.T, ctx context.Context, w *round, build func() *engine.Graph[*round], target engine.Target) string {
	t.Helper()
	res, err := engine.Run(ctx, build(), w, engine.Options{Target: target})
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	var out []string
	for _, c := range res.Plan.Changes {
		out = append(out, string(c.Action)+" "+c.Key.String())
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// boundTo lists the loop devices bound to img.
func boundTo(t *testing.T, img string) []string {
	t.Helper()
	out, err := e2e.Run(context.Background(), "losetup", "--list", "--noheadings", "--output", "NAME", "--associated", img)
	if err != nil {
		t.Errorf("listing the loop devices of %s: %v", img, err)
		return nil
	}
	return strings.Fields(out)
}
