//go:build e2e

package nodetasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/e2e"
)

// blkidWrapper puts a blkid first on PATH that runs script (sh, "$dev" is the device asked about) instead of the
// real one, for the rest of t.
func blkidWrapper(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	body := "#!/bin/sh\nfor dev; do :; done\n" + script + "\n"
	if err := os.WriteFile(filepath.Join(dir, "blkid"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// etcdData makes an ext4 filesystem on dev with one file of etcd data, and returns the filesystem's UUID.
func etcdData(t *testing.T, blkid, dev string) string {
	t.Helper()
	e2e.MustRun(t, "mkfs.ext4", "-q", "-F", dev)
	scratch := t.TempDir()
	e2e.MustRun(t, "mount", dev, scratch)
	err := os.WriteFile(filepath.Join(scratch, "member-data"), []byte("etcd data\n"), 0o600)
	e2e.MustRun(t, "umount", scratch)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(e2e.MustRun(t, blkid, "-p", "-s", "UUID", "-o", "value", dev))
}

// checkIntact fails t unless dev still holds the filesystem etcdData made, with its file.
func checkIntact(t *testing.T, blkid, dev, uuid string) {
	t.Helper()
	if got := strings.TrimSpace(e2e.MustRun(t, blkid, "-p", "-s", "UUID", "-o", "value", dev)); got != uuid {
		t.Fatalf("UUID %q, was %q: the device was formatted", got, uuid)
	}
	// Read with debugfs, not a mount: a mount namespace another test's process made while etcdData had the
	// device mounted may still hold it (mount -o ro then fails with "already mounted").
	if b, err := exec.Command("debugfs", "-R", "cat /member-data", dev).Output(); err != nil || string(b) != "etcd data\n" {
		t.Errorf("the file on the device: %q, %v", b, err)
	}
}

// refuses runs the FormatAndMount of dev at mp as a dry run, as an apply, and its Render alone (with its own probe
// and check), and fails t unless each refuses with a terminal error naming dev and containing want, mounting
// nothing.
func refuses(t *testing.T, n *Node, mp, dev, want string) {
	t.Helper()
	ctx := context.Background()
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		_, err := engine.Run(ctx, mountGraph(mp, dev)(), n, engine.Options{Target: target})
		if err == nil || !strings.Contains(err.Error(), dev) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want a refusal naming %s and containing %q", target, err, dev, want)
		}
	}
	m := &FormatAndMount{MountPoint: mp, Device: dev, FSType: ptr("ext4")}
	err := m.Render(ctx, n, nil, m, m)
	if err == nil || !strings.Contains(err.Error(), want) || engine.ClassOf(err) != engine.ClassTerminal {
		t.Errorf("Render: error %v (%v), want a terminal refusal containing %q", err, engine.ClassOf(err), want)
	}
	if got := mountedDevice(t, mp); got != "" {
		t.Errorf("%s is mounted at %s", got, mp)
	}
}

// FormatAndMount never formats a device it could not read, or whose ends are not zeros, whatever blkid says.
func TestFormatAndMountNeverFormatsWhatItCannotRead(t *testing.T) {
	e2e.RequireTools(t, "blkid")
	realBlkid, err := exec.LookPath("blkid")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("blkid denied access", func(t *testing.T) {
		n := realNode(t, "")
		dev := e2e.LoopDevice(t, diskSize)
		uuid := etcdData(t, realBlkid, dev)
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		blkidWrapper(t, `echo "blkid: error: $dev: Permission denied" >&2; exit 2`)
		refuses(t, n, mp, dev, "blkid: error: "+dev+": Permission denied")
		checkIntact(t, realBlkid, dev, uuid)
	})

	t.Run("blkid says nothing found on ext4", func(t *testing.T) {
		n := realNode(t, "")
		dev := e2e.LoopDevice(t, diskSize)
		uuid := etcdData(t, realBlkid, dev)
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		blkidWrapper(t, `exit 2`)
		refuses(t, n, mp, dev, "blkid found no signature, but byte ")
		checkIntact(t, realBlkid, dev, uuid)
	})

	t.Run("a device node without a driver (ENXIO)", func(t *testing.T) {
		n := realNode(t, "")
		dev := filepath.Join(t.TempDir(), "nodriver")
		if err := unix.Mknod(dev, unix.S_IFBLK|0o600, int(unix.Mkdev(freeBlockMajor(t), 0))); err != nil {
			t.Fatal(err)
		}
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		refuses(t, n, mp, dev, "No such device or address")
	})

	t.Run("a loop device that reads nothing", func(t *testing.T) {
		n := realNode(t, "")
		img := filepath.Join(t.TempDir(), "disk.img")
		if err := os.WriteFile(img, make([]byte, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
		// Offset past the end of its file: a bound loop device of size 0, which the real blkid probes as "nothing".
		dev := strings.TrimSpace(e2e.MustRun(t, "losetup", "--find", "--show", "--offset", "1048576", img))
		t.Cleanup(func() { e2e.MustRun(t, "losetup", "-d", dev) })
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		refuses(t, n, mp, dev, "reads as empty")
	})
}

// FormatAndMount never formats a device whose header was wiped by hand while its data is still there: blkid finds
// nothing, the first MiB reads as zeros, and the rest of the device does not.
func TestFormatAndMountNeverFormatsAWipedHeader(t *testing.T) {
	e2e.RequireTools(t, "blkid", "dd", "sha256sum")
	realBlkid, err := exec.LookPath("blkid")
	if err != nil {
		t.Fatal(err)
	}
	sum := func(dev string) string { return strings.Fields(e2e.MustRun(t, "sha256sum", dev))[0] }

	t.Run("ext4 whose first MiB was zeroed", func(t *testing.T) {
		n := realNode(t, "")
		dev := e2e.LoopDevice(t, diskSize)
		etcdData(t, realBlkid, dev)
		e2e.MustRun(t, "dd", "if=/dev/zero", "of="+dev, "bs=1M", "count=1", "conv=fsync", "status=none")
		before := sum(dev)
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		refuses(t, n, mp, dev, "blkid found no signature, but byte ")
		if sum(dev) != before {
			t.Error("the device was written")
		}
	})

	t.Run("a partition's filesystem at 1 MiB, the partition table wiped", func(t *testing.T) {
		n := realNode(t, "")
		part := e2e.LoopDevice(t, 16<<20)
		etcdData(t, realBlkid, part)
		dev := e2e.LoopDevice(t, diskSize)
		e2e.MustRun(t, "dd", "if="+part, "of="+dev, "bs=1M", "seek=1", "conv=notrunc,fsync", "status=none")
		before := sum(dev)
		mp := filepath.Join(t.TempDir(), "etcd")
		e2e.Unmount(t, mp)
		refuses(t, n, mp, dev, "blkid found no signature, but byte 1049")
		if sum(dev) != before {
			t.Error("the device was written")
		}
	})
}

// journalThatWrites is an attachment of volume Name and its provider's FormatJournal and MountGuard, whose
// BeginFormat runs write: what happens to the device between FormatAndMount's checks and its mkfs (another
// process, a device name taken over while a cloud call runs). Called for another volume, it fails.
type journalThatWrites struct {
	Name   string
	Device *string `kubeup:"output"`
	device string
	write  func()
	// beforeMount is what BeforeMount answers (the volume is no longer this node's: an error).
	beforeMount error
}

var (
	_ FormatJournal = (*journalThatWrites)(nil)
	_ MountGuard    = (*journalThatWrites)(nil)
)

// node is a node whose volumes' provider is j.
func (j *journalThatWrites) node(t *testing.T) *Node {
	t.Helper()
	e2e.RequireRoot(t)
	n, err := NewNode(context.Background(), "/", NodeOptions{Systemd: SystemdNone, FormatJournal: j, MountGuard: j})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// volume refuses a call for another volume than Name.
func (j *journalThatWrites) volume(id string) error {
	if id != j.Name {
		return fmt.Errorf("asked about volume %q, not %q", id, j.Name)
	}
	return nil
}

func (j *journalThatWrites) Key() engine.Key     { return engine.Key{Type: "FakeJournal", Name: j.Name} }
func (j *journalThatWrites) Deps() []engine.Task { return nil }
func (j *journalThatWrites) AttachedDevice() string {
	if j.Device == nil {
		return ""
	}
	return *j.Device
}
func (j *journalThatWrites) CheckChanges(_, _, _ *journalThatWrites) error { return nil }
func (j *journalThatWrites) FormatIntent(_ context.Context, id string) (string, error) {
	return "", j.volume(id)
}
func (j *journalThatWrites) BeginFormat(_ context.Context, id string) error {
	if err := j.volume(id); err != nil {
		return err
	}
	j.write()
	return nil
}
func (j *journalThatWrites) EndFormat(_ context.Context, id string) error { return j.volume(id) }
func (j *journalThatWrites) BeforeMount(_ context.Context, id string) error {
	if err := j.volume(id); err != nil {
		return err
	}
	return j.beforeMount
}
func (j *journalThatWrites) Find(context.Context, *Node) (*journalThatWrites, error) {
	return &journalThatWrites{Name: j.Name, Device: &j.device}, nil
}
func (j *journalThatWrites) Render(_ context.Context, _ *Node, _, expected, _ *journalThatWrites) error {
	expected.Device = &j.device
	return nil
}

// The device is probed again right before mkfs, after the format intent is recorded: one that changed meanwhile
// is not formatted.
func TestFormatAndMountChecksAgainBeforeMkfs(t *testing.T) {
	e2e.RequireTools(t, "blkid", "mkfs.ext4")
	realBlkid, err := exec.LookPath("blkid")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		write func(t *testing.T, dev string) func()
		want  string
	}{
		{name: "a filesystem made meanwhile", want: "changed while it was being formatted: it held nothing, and now holds an ext4 filesystem",
			write: func(t *testing.T, dev string) func() { return func() { etcdData(t, realBlkid, dev) } }},
		{name: "data written meanwhile", want: "blkid found no signature, but byte 33554432 is not zero",
			write: func(t *testing.T, dev string) func() {
				return func() { // bytes that are never zero, so the first one written is the one reported
					f, err := os.OpenFile(dev, os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", 4096)), 8192*4096); err != nil {
						t.Fatal(err)
					}
					if err := f.Sync(); err != nil {
						t.Fatal(err)
					}
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dev := e2e.LoopDevice(t, diskSize)
			mp := filepath.Join(t.TempDir(), "etcd")
			e2e.Unmount(t, mp)
			var written string // the device's sha256 after the write
			write := tt.write(t, dev)
			j := &journalThatWrites{Name: "v", device: dev, write: func() {
				write()
				written = strings.Fields(e2e.MustRun(t, "sha256sum", dev))[0]
			}}
			g := engine.NewGraph[*Node]()
			engine.Add(g, j)
			engine.Add(g, &FormatAndMount{MountPoint: mp, Attachment: j, Volume: "v", FSType: ptr("ext4")})
			_, err := engine.Run(ctx, g, j.node(t), engine.Options{Target: engine.Apply})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dev) {
				t.Fatalf("apply: %v; want a refusal naming %s and containing %q", err, dev, tt.want)
			}
			if got := mountedDevice(t, mp); got != "" {
				t.Errorf("%s is mounted at %s", got, mp)
			}
			if now := strings.Fields(e2e.MustRun(t, "sha256sum", dev))[0]; now != written {
				t.Error("the device was written after the refusal")
			}
		})
	}
}

// A volume that is no longer this node's right before the mount (MountGuard) is not mounted, whatever it holds.
func TestFormatAndMountAsksBeforeMounting(t *testing.T) {
	e2e.RequireTools(t, "blkid", "mkfs.ext4")
	realBlkid, err := exec.LookPath("blkid")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dev := e2e.LoopDevice(t, diskSize)
	etcdData(t, realBlkid, dev)
	mp := filepath.Join(t.TempDir(), "etcd")
	e2e.Unmount(t, mp)
	j := &journalThatWrites{Name: "v", device: dev, write: func() {}, beforeMount: engine.Terminal(errors.New("held by node-b since a moment ago"))}
	g := engine.NewGraph[*Node]()
	engine.Add(g, j)
	engine.Add(g, &FormatAndMount{MountPoint: mp, Attachment: j, Volume: "v", FSType: ptr("ext4")})
	if _, err := engine.Run(ctx, g, j.node(t), engine.Options{Target: engine.Apply}); err == nil || !strings.Contains(err.Error(), "volume v, about to be mounted: held by node-b") {
		t.Fatalf("apply: %v; want the guard's refusal", err)
	}
	if got := mountedDevice(t, mp); got != "" {
		t.Errorf("%s is mounted at %s", got, mp)
	}
}

// freeBlockMajor returns a block device major number in the range for local and experimental use that no driver
// has registered: a node with it opens with ENXIO.
func freeBlockMajor(t *testing.T) uint32 {
	t.Helper()
	f, err := os.Open("/proc/devices")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	used := map[uint32]bool{}
	block := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "Block devices:" {
			block = true
			continue
		}
		if num, _, ok := strings.Cut(line, " "); ok && block {
			if v, err := strconv.ParseUint(num, 10, 32); err == nil {
				used[uint32(v)] = true
			}
		}
	}
	for m := uint32(240); m <= 254; m++ {
		if !used[m] {
			return m
		}
	}
	t.Fatal("no free block major in 240-254")
	return 0
}

// A mount point that is a symbolic link is resolved inside the node root, as every node path: a link to an
// absolute path mounts at that path inside the root, never at the host's; a link that climbs out is refused.
func TestFormatAndMountStaysInsideRoot(t *testing.T) {
	ctx := context.Background()
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "blkid", "mkfs.ext4", "mount", "umount")
	root := t.TempDir()
	n, err := NewNode(ctx, root, NodeOptions{Systemd: SystemdNone})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	t.Run("absolute link", func(t *testing.T) {
		dev := e2e.LoopDevice(t, diskSize)
		hostDir := t.TempDir()
		inRoot := filepath.Join(root, hostDir)
		e2e.Unmount(t, hostDir)
		e2e.Unmount(t, inRoot)
		if err := os.MkdirAll(filepath.Join(root, "mnt"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(hostDir, filepath.Join(root, "mnt/etcd")); err != nil {
			t.Fatal(err)
		}
		enginetest.ApplyThenNoChanges(t, ctx, n, mountGraph("/mnt/etcd", dev))
		if got := mountedDevice(t, hostDir); got != "" {
			t.Errorf("%s is mounted at the host's %s", got, hostDir)
		}
		if got := mountedDevice(t, inRoot); got != dev {
			t.Errorf("mounted at %s: %q, want %s", inRoot, got, dev)
		}
	})

	t.Run("link that climbs out", func(t *testing.T) {
		dev := e2e.LoopDevice(t, diskSize)
		hostDir := t.TempDir()
		e2e.Unmount(t, hostDir)
		rel, err := filepath.Rel(filepath.Join(root, "mnt"), hostDir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, filepath.Join(root, "mnt/main")); err != nil {
			t.Fatal(err)
		}
		_, err = engine.Run(ctx, mountGraph("/mnt/main", dev)(), n, engine.Options{Target: engine.Apply})
		if err == nil || !strings.Contains(err.Error(), "the symbolic link /mnt/main -> "+rel+" escapes the node root") {
			t.Errorf("want a refusal naming the link, got %v", err)
		}
		if got := mountedDevice(t, hostDir); got != "" {
			t.Errorf("%s is mounted at the host's %s", got, hostDir)
		}
	})
}
