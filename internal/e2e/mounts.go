package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/mountinfo"
)

// MountWatch checks, while a test runs, that no volume is mounted on two nodes at once (see NeverMountedTwice).
type MountWatch struct {
	t     testing.TB
	roots []string

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
	w := &MountWatch{t: t, stop: make(chan struct{}), done: make(chan struct{})}
	for _, r := range roots {
		w.roots = append(w.roots, filepath.Clean(r))
	}
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
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil && !reported {
			w.t.Errorf("NeverMountedTwice: %v", err)
			reported = true
		} else if v := mountedTwice(string(b), w.roots, loopBacking); v != nil && !reported {
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

// doubleMount is one volume mounted under two node roots.
type doubleMount struct {
	Volume string    // "loop file /pool/a.img" or "device 8:17"
	At     [2]string // the two mount points, sorted
	Roots  [2]string // their node roots
}

func (d *doubleMount) String() string {
	return fmt.Sprintf("%s is mounted on two nodes at once: at %s (node root %s) and at %s (node root %s)",
		d.Volume, d.At[0], d.Roots[0], d.At[1], d.Roots[1])
}

// mountedTwice returns the first volume of the mount table (in mountinfo's format) mounted under two of the
// roots, or nil. backing returns the file behind a loop device given as major:minor, "" for another device.
func mountedTwice(table string, roots []string, backing func(majmin string) string) *doubleMount {
	type seen struct{ at, root string }
	first := map[string]seen{}
	var found []*doubleMount
	for _, m := range mountinfo.Parse(table) {
		if !m.HasDevice() {
			continue
		}
		at := m.MountPoint
		root := ownerRoot(at, roots)
		if root == "" {
			continue
		}
		volume := "device " + m.Number()
		if file := backing(m.Number()); file != "" {
			volume = "loop file " + file
		}
		s, ok := first[volume]
		if !ok {
			first[volume] = seen{at, root}
			continue
		}
		if s.root != root {
			d := &doubleMount{Volume: volume, At: [2]string{s.at, at}, Roots: [2]string{s.root, root}}
			if d.At[0] > d.At[1] {
				d.At[0], d.At[1], d.Roots[0], d.Roots[1] = d.At[1], d.At[0], d.Roots[1], d.Roots[0]
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

// loopBacking returns the file behind the loop device major:minor, "" when it is not a loop device.
func loopBacking(majmin string) string {
	b, err := os.ReadFile("/sys/dev/block/" + majmin + "/loop/backing_file")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
}
