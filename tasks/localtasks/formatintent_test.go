package localtasks

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/tasks/volumetasks"
)

// A format intent is a field of the volume's sidecar: recorded and removed as a whole, kept by every other change
// of the sidecar (tags, size), read by any node, and a malformed one is an error that names the file and field.
func TestVolumesFormatIntent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pool, err := NewPool(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Create(ctx, VolumeInfo{Name: "v", Zone: "local-a", SizeGB: 1, VolumeType: VolumeTypeSparse}); err != nil {
		t.Fatal(err)
	}
	a := NewVolumes(pool, volumetasks.Holder{NodeID: "node-a"}, time.Minute)
	b := NewVolumes(pool, volumetasks.Holder{NodeID: "node-b"}, time.Minute)
	intent := func(want string) {
		t.Helper()
		if got, err := b.FormatIntent(ctx, "v"); err != nil || got != want {
			t.Fatalf("FormatIntent = %q, %v; want %q", got, err, want)
		}
	}
	claim := func(node string, renewed time.Time) {
		t.Helper()
		if err := pool.writeClaim("v", &claimRecord{NodeID: node, Since: renewed, Renewed: renewed, Lease: "1m0s"}); err != nil {
			t.Fatal(err)
		}
	}
	intent("")
	// Only the node that holds the volume records or removes an intent: it is about to format or mount it.
	if err := a.BeginFormat(ctx, "v"); err == nil || !strings.Contains(err.Error(), "this node's claim is gone") {
		t.Errorf("BeginFormat without a claim: %v", err)
	}
	// A claim of this node whose lease ran out while nobody took the volume over is still this node's: renewed.
	claim("node-a", time.Now().Add(-2*time.Minute))
	if err := a.EndFormat(ctx, "v"); err != nil {
		t.Fatalf("EndFormat with this node's expired claim: %v", err)
	}
	if c, err := pool.readClaim("v"); err != nil || c.expired(time.Now()) {
		t.Errorf("the claim after: %+v, %v; want it renewed", c, err)
	}
	// A claim that names a loop device no longer bound to the volume's image (unbound by a takeover since).
	if err := pool.writeClaim("v", &claimRecord{NodeID: "node-a", Device: "/dev/loop-gone", Since: time.Now(), Renewed: time.Now(), Lease: "1m0s"}); err != nil {
		t.Fatal(err)
	}
	if err := a.BeginFormat(ctx, "v"); err == nil || !strings.Contains(err.Error(), "/dev/loop-gone, which is no longer bound to") {
		t.Errorf("BeginFormat with a loop device no longer bound: %v", err)
	}
	claim("node-a", time.Now())
	if err := a.EndFormat(ctx, "v"); err != nil {
		t.Fatalf("EndFormat without an intent: %v", err)
	}
	if err := a.BeginFormat(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	intent("node-a")
	var held *volumetasks.HeldError
	if err := b.BeginFormat(ctx, "v"); !errors.As(err, &held) || held.Holder.NodeID != "node-a" {
		t.Errorf("BeginFormat of a volume node-a holds: %v", err)
	}
	if err := pool.SetTags(ctx, "v", map[string]string{"k8s.io/etcd/main": "a/a,b,c"}); err != nil {
		t.Fatal(err)
	}
	if err := pool.Grow(ctx, "v", 2); err != nil {
		t.Fatal(err)
	}
	intent("node-a")
	claim("node-b", time.Now()) // node-a's lease ran out and node-b took the volume over
	if err := a.EndFormat(ctx, "v"); !errors.As(err, &held) || held.Holder.NodeID != "node-b" {
		t.Errorf("EndFormat of a volume node-a lost: %v", err)
	}
	intent("node-a")
	if err := b.BeginFormat(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	intent("node-b")
	if err := b.EndFormat(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	intent("")
	info, err := pool.Get(ctx, "v")
	if err != nil || info.SizeGB != 2 || info.Tags["k8s.io/etcd/main"] != "a/a,b,c" {
		t.Errorf("the volume after the intents: %+v, %v", info, err)
	}

	if err := os.WriteFile(dir+"/v.json", []byte(`{"name":"v","zone":"local-a","sizeGB":2,"volumeType":"sparse","formatIntent":{"since":"x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.FormatIntent(ctx, "v"); err == nil || !strings.Contains(err.Error(), dir+"/v.json: field formatIntent") {
		t.Errorf("a malformed intent: %v; want an error naming the file and the field", err)
	}
	if _, err := b.FormatIntent(ctx, "w"); err == nil {
		t.Error("the intent of a volume that does not exist: no error")
	}
}

// TestBeforeMount: right before a mount, the volume must still be this node's (its claim renewed if its lease
// ran out and nobody took it); a claim gone or another node's refuses the mount.
func TestBeforeMount(t *testing.T) {
	ctx := context.Background()
	pool, err := NewPool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Create(ctx, VolumeInfo{Name: "v", Zone: "local-a", SizeGB: 1, VolumeType: VolumeTypeSparse}); err != nil {
		t.Fatal(err)
	}
	a := NewVolumes(pool, volumetasks.Holder{NodeID: "node-a"}, time.Minute)
	if err := a.BeforeMount(ctx, "v"); err == nil || !strings.Contains(err.Error(), "this node's claim is gone, so it stops short of mounting it") {
		t.Errorf("without a claim: %v", err)
	}
	claim := func(node string, renewed time.Time) {
		t.Helper()
		if err := pool.writeClaim("v", &claimRecord{NodeID: node, Since: renewed, Renewed: renewed, Lease: "1m0s"}); err != nil {
			t.Fatal(err)
		}
	}
	claim("node-a", time.Now().Add(-time.Hour))
	if err := a.BeforeMount(ctx, "v"); err != nil {
		t.Errorf("this node's expired claim, nobody took it: %v", err)
	}
	claim("node-b", time.Now())
	var held *volumetasks.HeldError
	if err := a.BeforeMount(ctx, "v"); !errors.As(err, &held) || held.Holder.NodeID != "node-b" {
		t.Errorf("another node's claim: %v", err)
	}
}
