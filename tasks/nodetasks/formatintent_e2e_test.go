//go:build e2e

package nodetasks

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// A format is journaled on the volume (its pool sidecar here): what an interrupted mkfs left on a volume that
// still carries the intent is formatted again, by whichever node holds the volume next; without the intent, or
// with a filesystem that was ever mounted, or with anything else on it, nothing is formatted.
func TestFormatAgainAfterAnInterruptedFormat(t *testing.T) {
	ctx := context.Background()
	pool, err := localtasks.NewPool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// node-a began the formats and died, its claims ended; node-b holds the volumes now.
	a := localtasks.NewVolumes(pool, volumetasks.Holder{NodeID: "node-a"}, time.Minute)
	b := newRound(t, localtasks.NewVolumes(pool, volumetasks.Holder{NodeID: "node-b"}, time.Minute))

	// Each case's volume image, as a killed node-a left it.
	junk := func(t *testing.T, img string) { // an mkfs killed before its superblock: blocks, no signature
		f, err := os.OpenFile(img, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", 4096)), 8192); err != nil {
			t.Fatal(err)
		}
	}
	neverMounted := func(t *testing.T, img string) { // mkfs killed after its superblock
		e2e.MustRun(t, "mkfs.ext4", "-q", "-F", img)
	}
	withData := func(t *testing.T, img string) { // a filesystem that was mounted and written to
		e2e.MustRun(t, "mkfs.ext4", "-q", "-F", img)
		scratch := t.TempDir()
		e2e.MustRun(t, "mount", "-o", "loop", img, scratch)
		err := os.WriteFile(filepath.Join(scratch, "member-data"), []byte("etcd data\n"), 0o600)
		e2e.MustRun(t, "umount", scratch)
		if err != nil {
			t.Fatal(err)
		}
	}
	partitioned := func(t *testing.T, img string) { writeMBR(t, img) }
	filledOffline := func(t *testing.T, img string) { // never mounted, but a file put in it: mke2fs -d
		seed := t.TempDir()
		if err := os.WriteFile(filepath.Join(seed, "member-data"), []byte("etcd data\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e2e.MustRun(t, "mkfs.ext4", "-q", "-F", "-d", seed, img)
	}

	for i, tt := range []struct {
		name   string
		leave  func(*testing.T, string)
		intent bool
		// formats: the run formats the volume and mounts it; otherwise refusal, when not "", is the error it
		// fails with, and "" that it mounts what is there.
		formats bool
		refusal string
		data    bool // the mount shows the data withData wrote
	}{
		{name: "blocks and no signature, intent", leave: junk, intent: true, formats: true},
		{name: "blocks and no signature, no intent", leave: junk, refusal: "blkid found no signature, but byte 8192 is not zero"},
		{name: "a filesystem never mounted, intent", leave: neverMounted, intent: true, formats: true},
		{name: "a filesystem never mounted, no intent", leave: neverMounted},
		{name: "a filesystem with data, intent", leave: withData, intent: true, data: true},
		{name: "a filesystem filled offline, never mounted, intent", leave: filledOffline, intent: true, data: true},
		{name: "a partition table, intent", leave: partitioned, intent: true, refusal: "holds a partition table (dos)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := "v" + string(rune('a'+i))
			if err := pool.Create(ctx, localtasks.VolumeInfo{Name: name, Zone: "local-a", SizeGB: 1, VolumeType: localtasks.VolumeTypeSparse}); err != nil {
				t.Fatal(err)
			}
			img, _ := pool.ImagePath(name)
			e2e.DetachLoopsOf(t, img) // after the unmount registered below
			mp := filepath.Join(t.TempDir(), "master-"+name)
			e2e.Unmount(t, mp)
			tt.leave(t, img)
			if tt.intent { // node-a held the volume when it began the format; its claim ended since
				if _, err := a.Attach(ctx, name); err != nil {
					t.Fatal(err)
				}
				if err := a.BeginFormat(ctx, name); err != nil {
					t.Fatal(err)
				}
				if err := a.Detach(ctx, name); err != nil {
					t.Fatal(err)
				}
			}
			before := edges(t, img)
			oldUUID := strings.TrimSpace(e2e.MustRun(t, "sh", "-c", `blkid -p -s UUID -o value "$1" || true`, "sh", img))

			_, err := engine.Run(ctx, claimAndMount(name, mp)(), b, engine.Options{Target: engine.Apply})
			dev, _ := b.vols.Attached(ctx, name)
			if tt.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refusal) {
					t.Fatalf("apply: %v, want a refusal containing %q", err, tt.refusal)
				}
				if got := mountedDevice(t, mp); got != "" {
					t.Errorf("%s is mounted at %s", got, mp)
				}
				if after := edges(t, img); after != before {
					t.Errorf("the volume changed: its first 4 MiB and last MiB hash to %s, was %s", after, before)
				}
				if node, err := b.vols.FormatIntent(ctx, name); err != nil || node != map[bool]string{true: "node-a"}[tt.intent] {
					t.Errorf("intent after the refusal: %q, %v", node, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if dev == "" || mountedDevice(t, mp) != dev {
				t.Fatalf("%s: %q mounted, want the volume's device %q", mp, mountedDevice(t, mp), dev)
			}
			uuid := blkidValue(t, dev, "UUID")
			if formatted := uuid != oldUUID; formatted != tt.formats {
				t.Errorf("UUID %q, was %q: formatted %v, want %v", uuid, oldUUID, formatted, tt.formats)
			}
			if tt.formats {
				if node, err := b.vols.FormatIntent(ctx, name); err != nil || node != "" {
					t.Errorf("intent after the format: %q, %v; want none", node, err)
				}
			}
			if data, err := os.ReadFile(filepath.Join(mp, "member-data")); (err == nil) != tt.data {
				t.Errorf("member-data on the mount: %q, %v; want it there: %v", data, err, tt.data)
			}
			if got := changes(t, ctx, b, claimAndMount(name, mp), engine.DryRun); got != "" {
				t.Errorf("dry run after the apply: %s, want no changes", got)
			}
		})
	}
}

// The dry run of a volume that holds what an interrupted format left shows the format the apply makes; the
// intent is recorded before mkfs runs and removed before the filesystem is mounted.
func TestFormatIntentAroundMkfs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pool, err := localtasks.NewPool(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := newRound(t, localtasks.NewVolumes(pool, volumetasks.Holder{NodeID: "node-a"}, time.Minute))
	if err := pool.Create(ctx, localtasks.VolumeInfo{Name: "v", Zone: "local-a", SizeGB: 1, VolumeType: localtasks.VolumeTypeSparse}); err != nil {
		t.Fatal(err)
	}
	img, _ := pool.ImagePath("v")
	e2e.DetachLoopsOf(t, img)
	mp := filepath.Join(t.TempDir(), "master-v")
	e2e.Unmount(t, mp)

	// mkfs.ext4 records whether the sidecar held node-a's intent when it ran, and whether anything was mounted
	// from the device then.
	wrapDir, seen := t.TempDir(), filepath.Join(t.TempDir(), "seen")
	realMkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nfor dev; do :; done\n" +
		`grep -c '"nodeID": "node-a"' ` + filepath.Join(dir, "v.json") + ` >> ` + seen + "\n" +
		`grep -c "^$dev " /proc/mounts >> ` + seen + "\n" +
		`exec ` + realMkfs + ` "$@"` + "\n"
	if err := os.WriteFile(filepath.Join(wrapDir, "mkfs.ext4"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", wrapDir+string(os.PathListSeparator)+os.Getenv("PATH"))

	// A first round attaches the blank volume and formats it: the intent is on the volume during mkfs only.
	if got := changes(t, ctx, w, claimAndMount("v", mp), engine.Apply); got != "create VolumeAttach/v, modify FormatAndMount/"+mp {
		t.Errorf("apply: %s", got)
	}
	if b, err := os.ReadFile(seen); err != nil || string(b) != "1\n0\n" {
		t.Errorf("during mkfs (intent lines, mounts of the device): %q, %v; want the intent, nothing mounted", b, err)
	}
	if node, err := w.vols.FormatIntent(ctx, "v"); err != nil || node != "" {
		t.Errorf("intent after the format: %q, %v; want none", node, err)
	}

	// Unmounted again, with an intent left as a node killed in mkfs leaves it (its mkfs had made no superblock
	// yet: wipe it), the dry run shows the format again; the apply makes it.
	e2e.MustRun(t, "umount", mp)
	dev, _ := w.vols.Attached(ctx, "v")
	e2e.MustRun(t, "wipefs", "--all", "--quiet", dev)
	e2e.MustRun(t, "dd", "if=/dev/urandom", "of="+dev, "bs=4096", "seek=2", "count=1", "conv=fsync", "status=none")
	if err := w.vols.BeginFormat(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(ctx, claimAndMount("v", mp)(), w, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if c := res.Plan.Changes; len(c) != 1 || c[0].Key.Name != mp || !slices.ContainsFunc(c[0].Fields, func(f engine.FieldChange) bool { return f.Name == "FSType" }) {
		t.Errorf("dry run of an interrupted format: %+v; want FormatAndMount/%s's FSType set (the format)", c, mp)
	}
	if got := changes(t, ctx, w, claimAndMount("v", mp), engine.Apply); got != "modify FormatAndMount/"+mp {
		t.Errorf("apply: %s", got)
	}
	if b, err := os.ReadFile(seen); err != nil || string(b) != "1\n0\n1\n0\n" {
		t.Errorf("during the two mkfs runs: %q, %v", b, err)
	}
	if got := changes(t, ctx, w, claimAndMount("v", mp), engine.DryRun); got != "" {
		t.Errorf("dry run after: %s, want no changes", got)
	}
}

// edges hashes what an mkfs and a partition table write to: an image's first 4 MiB and its last MiB.
func edges(t *testing.T, img string) string {
	t.Helper()
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 4<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(h, io.NewSectionReader(f, fi.Size()-1<<20, 1<<20)); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
