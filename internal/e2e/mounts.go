package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"kubeup.dev/kubeup/internal/mountinfo"
)

// MountWatch checks, while a test runs, that no volume is mounted on two nodes at once (see NeverMountedTwice).
type MountWatch struct {
	t     testing.TB
	check func() (*doubleMount, error)

	mu     sync.Mutex
	checks int

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// mountWatchPoll is how often a MountWatch reads the mount table.
const mountWatchPoll = 50 * time.Millisecond

// NeverMountedTwice reads this process's mount table (/proc/self/mountinfo: the host's mount namespace, where
// the nodes' protokube mount) every 50ms until the test ends, and fails t, once, naming both mount points, when
// one volume is mounted under two of the node roots at the same moment. A volume is a block device (major:minor
// of the mount) or, for a loop device, the file behind it: two loop devices over one image are one volume.
// Mounts outside every root, and those of filesystems without a device (tmpfs, proc, overlay), are not looked
// at; one volume mounted twice under the same root is allowed. A mount point belongs to the longest root it is
// under. The watch stops at t.Cleanup, or at Stop.
func NeverMountedTwice(t testing.TB, roots ...string) *MountWatch {
	t.Helper()
	var clean []string
	for _, r := range roots {
		clean = append(clean, filepath.Clean(r))
	}
	return watchMounts(t, func() (*doubleMount, error) {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return nil, err
		}
		return mountedTwice(string(b), clean, loopBacking), nil
	})
}

// NodeMounts is where a check finds one machine's mounts (BootMachine): the mount table of its init's mount
// namespace, where its protokube mounts, and the directory, as the machine sees it, its volumes are mounted under.
type NodeMounts struct {
	// Node names the node in messages.
	Node string
	// Mountinfo is the machine's table: /proc/<its init>/mountinfo. A machine that is gone has none: it holds
	// nothing.
	Mountinfo string
	// Dir is where its volumes are mounted: "/mnt".
	Dir string
}

// MachineMounts is the NodeMounts of machine m for node, its volumes mounted under dir.
func MachineMounts(node string, m *Container, dir string) NodeMounts {
	return NodeMounts{Node: node, Mountinfo: "/proc/" + strconv.Itoa(m.PID) + "/mountinfo", Dir: dir}
}

// NeverMountedTwiceOn is NeverMountedTwice for machines, each with a mount namespace of its own: every 50ms
// it reads the tables of the machines nodes returns at that moment (machines come and go), and fails t, once,
// when one volume is mounted under the Dir of two of them at the same moment.
func NeverMountedTwiceOn(t testing.TB, nodes func() []NodeMounts) *MountWatch {
	t.Helper()
	return watchMounts(t, func() (*doubleMount, error) { return twice(machinePlaced(nodes(), loopBacking)), nil })
}

// watchMounts runs check every mountWatchPoll until t.Cleanup or Stop.
func watchMounts(t testing.TB, check func() (*doubleMount, error)) *MountWatch {
	w := &MountWatch{t: t, check: check, stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(w.Stop)
	go w.run()
	return w
}

// Stop stops the watch after one last check, and returns when it is done. Stopping twice does nothing.
func (w *MountWatch) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

// Checks is how many times the watch has read the mount table: a test can make sure it looked.
func (w *MountWatch) Checks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checks
}

func (w *MountWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(mountWatchPoll)
	defer tick.Stop()
	reported := false // the test fails once, with the first double mount seen
	for {
		v, err := w.check()
		if err != nil && !reported {
			w.t.Errorf("NeverMountedTwice: %v", err)
			reported = true
		} else if v != nil && !reported {
			w.t.Errorf("NeverMountedTwice: %s", v)
			reported = true
		}
		w.mu.Lock()
		w.checks++
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

// doubleMount is one volume mounted on two nodes.
type doubleMount struct {
	Volume string    // "loop file /pool/a.img" or "device 8:17"
	At     [2]string // the two mount points, sorted
	Nodes  [2]string // their nodes: "node root /n/a", "machine node2"
}

func (d *doubleMount) String() string {
	return fmt.Sprintf("%s is mounted on two nodes at once: at %s (%s) and at %s (%s)",
		d.Volume, d.At[0], d.Nodes[0], d.At[1], d.Nodes[1])
}

// placedMount is one mount of a volume on a node.
type placedMount struct {
	volume string // "loop file /pool/a.img" or "device 8:17"
	at     string // its mount point, as the node sees it
	node   string // "node root /n/a", "machine node2"
}

// volumeOf names the volume of a mount: the file behind it when it is a loop device, else its device.
func volumeOf(m mountinfo.Mount, backing func(majmin string) string) string {
	if file := backing(m.Number()); file != "" {
		return "loop file " + file
	}
	return "device " + m.Number()
}

// hostPlaced returns the mounts of the mount table (in mountinfo's format) under the roots, each on the longest
// root it is under. Filesystems without a device are left out. backing returns the file behind a loop device
// given as major:minor, "" for another device.
func hostPlaced(table string, roots []string, backing func(majmin string) string) []placedMount {
	var out []placedMount
	for _, m := range mountinfo.Parse(table) {
		if !m.HasDevice() {
			continue
		}
		if _, ok := sharedMountDirs.Load(m.MountPoint); ok {
			continue // SharedMounts' bind of a node's root on itself
		}
		if root := ownerRoot(m.MountPoint, roots); root != "" {
			out = append(out, placedMount{volumeOf(m, backing), m.MountPoint, "node root " + root})
		}
	}
	return out
}

// machinePlaced returns the mounts under each machine's Dir in its own table; a machine whose table cannot be
// read (it is gone) holds none.
func machinePlaced(nodes []NodeMounts, backing func(majmin string) string) []placedMount {
	var out []placedMount
	for _, n := range nodes {
		b, err := os.ReadFile(n.Mountinfo)
		if err != nil {
			continue
		}
		dir := []string{filepath.Clean(n.Dir)}
		for _, m := range mountinfo.Parse(string(b)) {
			if m.HasDevice() && ownerRoot(m.MountPoint, dir) != "" {
				out = append(out, placedMount{volumeOf(m, backing), m.MountPoint, "machine " + n.Node})
			}
		}
	}
	return out
}

// mountedTwice returns the first volume of the mount table (in mountinfo's format) mounted under two of the
// roots, or nil (see hostPlaced).
func mountedTwice(table string, roots []string, backing func(majmin string) string) *doubleMount {
	return twice(hostPlaced(table, roots, backing))
}

// twice returns the first volume, in order of its name, mounted on two nodes, or nil; one node may mount a
// volume twice.
func twice(mounts []placedMount) *doubleMount {
	first := map[string]placedMount{}
	var found []*doubleMount
	for _, m := range mounts {
		s, ok := first[m.volume]
		if !ok {
			first[m.volume] = m
			continue
		}
		if s.node != m.node {
			d := &doubleMount{Volume: m.volume, At: [2]string{s.at, m.at}, Nodes: [2]string{s.node, m.node}}
			if d.At[0] > d.At[1] {
				d.At[0], d.At[1], d.Nodes[0], d.Nodes[1] = d.At[1], d.At[0], d.Nodes[1], d.Nodes[0]
			}
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Volume < found[j].Volume })
	return found[0]
}

// ownerRoot returns the longest of roots that path is at or under, "" for none.
func ownerRoot(path string, roots []string) string {
	best := ""
	for _, r := range roots {
		if (path == r || strings.HasPrefix(path, r+"/") || r == "/") && len(r) > len(best) {
			best = r
		}
	}
	return best
}

// loopBacking returns the file behind the loop device major:minor, "" when it is not a loop device. sysfs
// names the file by its path from the mount it was opened through, as this process reaches it: a file bound
// through a mount this process does not see (a machine's bind mount of the pool, the machine dead and its
// mounts gone with it) is named from that mount's root ("/a.img"), so such a device is matched by the file's
// device and inode numbers to a path seen before (loopFiles).
func loopBacking(majmin string) string {
	b, err := os.ReadFile("/sys/dev/block/" + majmin + "/loop/backing_file")
	if err != nil {
		return ""
	}
	path := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		loopFiles.Store(fileIdentity(fi), path)
		return path
	}
	id, err := loopDeviceFile(majmin)
	if err != nil {
		return path
	}
	if known, ok := loopFiles.Load(id); ok {
		// A file removed since leaves its numbers to the next one made there: the path must still be this file.
		if fi, err := os.Stat(known.(string)); err == nil && fileIdentity(fi) == id {
			return known.(string)
		}
		loopFiles.Delete(id)
	}
	return path + " (device:inode " + id + ")"
}

// loopFiles maps the device and inode numbers of the loop devices' files ("dev:ino") to their paths, as this
// process reaches them: every path loopBacking resolved, every image MountsOfFile and MountsOfFileOn were asked
// about.
var loopFiles sync.Map

// rememberLoopFile adds file to loopFiles.
func rememberLoopFile(file string) {
	if fi, err := os.Stat(file); err == nil {
		loopFiles.Store(fileIdentity(fi), filepath.Clean(file))
	}
}

// fileIdentity is "dev:ino" of a file, as LOOP_GET_STATUS64 reports them of a loop device's file.
func fileIdentity(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// loopDeviceFile returns "dev:ino" of the file behind the loop device major:minor. It opens the device (shared,
// for a moment), so it is used only for devices whose file sysfs cannot name.
func loopDeviceFile(majmin string) (string, error) {
	link, err := os.Readlink("/sys/dev/block/" + majmin)
	if err != nil {
		return "", err
	}
	f, err := os.Open("/dev/" + filepath.Base(link))
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := unix.IoctlLoopGetStatus64(int(f.Fd()))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", info.Device, info.Inode), nil
}
