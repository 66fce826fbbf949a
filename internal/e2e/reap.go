package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/mountinfo"
)

// A test binary that -timeout kills (it panics), or that a signal ends, runs none of its t.Cleanup functions:
// its loop devices, mounts and containers would stay behind for good. So each of them is also written down in a
// registry, one directory per test process, and the first e2e helper a later test process calls undoes what
// dead processes left, by the process ids, devices and paths written down, never by a name pattern.
//
// The registry lives under /run, a tmpfs that a reboot empties just as it detaches loop devices and ends
// mounts and processes.

// RegistryDirEnv overrides where the registry is kept (tests of the reaper itself).
const RegistryDirEnv = "KUBEUP_E2E_REGISTRY"

const defaultRegistryDir = "/run/kubeup-e2e"

func registryDir() string {
	if d := os.Getenv(RegistryDirEnv); d != "" {
		return d
	}
	return defaultRegistryDir
}

// Record kinds, in the order a reap undoes them: processes first (they may hold mounts busy), then the cgroups
// they ran in, then mounts, then network namespaces (the processes still in one are killed with it; its links go
// with it), then network links, then loop devices, then directories, then directories removed only when empty,
// and last the host's kernel settings.
const (
	kindProcess  = "process"  // PID with its start time: a process id alone may have been reused
	kindMount    = "mount"    // Path
	kindNetns    = "netns"    // Path: /run/netns/NAME, a named network namespace (ip netns add NAME)
	kindLink     = "link"     // Dev: a network interface's name on the host, with its Ifindex (never reused by name alone)
	kindLoop     = "loop"     // Dev, attached to the file Path
	kindDir      = "dir"      // Path, removed once nothing is mounted under it
	kindEmptyDir = "emptydir" // Path, removed only when empty (a directory shared with other test processes)
	kindCgroup   = "cgroup"   // Path: a cgroup a machine ran in (BootMachine), removed with every cgroup below it
	kindSysctl   = "sysctl"   // kubelet's kernel settings, held on the host (holdSysctls)
)

var kindOrder = map[string]int{kindProcess: 0, kindCgroup: 1, kindMount: 2, kindNetns: 3, kindLink: 4, kindLoop: 5, kindDir: 6, kindEmptyDir: 7, kindSysctl: 8}

// record is one thing a test process made that must not outlive it.
type record struct {
	Kind  string `json:"kind"`
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"` // the process's start time, in clock ticks since boot (/proc/PID/stat)
	Group bool   `json:"group,omitempty"` // kill PID's process group too
	Dev   string `json:"dev,omitempty"`
	Path  string `json:"path,omitempty"`
	// Ifindex is a link's interface index: a link is ours only while its name still has this index.
	Ifindex int `json:"ifindex,omitempty"`

	keepFile bool // a loop device's file is not ours: detach, do not remove (never recorded)
}

var (
	regMu   sync.Mutex
	regSelf string // this process's registry directory
	regSeq  int
)

// register writes rec down for this process and returns the function that crosses it out again, for the
// t.Cleanup that undoes the thing. A failure to write the registry fails t: an unrecorded leftover is the
// problem this exists to prevent.
func register(t testing.TB, rec record) (done func()) {
	t.Helper()
	done, err := registerErr(rec)
	if err != nil {
		t.Fatalf("e2e registry: %v", err)
	}
	return done
}

// registerErr is register for a goroutine other than the test's, which must not call t.Fatal.
func registerErr(rec record) (done func(), err error) {
	regMu.Lock()
	defer regMu.Unlock()
	if regSelf == "" {
		start, err := processStart(os.Getpid())
		if err != nil {
			return nil, err
		}
		self := filepath.Join(registryDir(), fmt.Sprintf("%d-%d", os.Getpid(), start))
		if err := os.MkdirAll(self, 0o700); err != nil {
			return nil, err
		}
		regSelf = self
	}
	regSeq++
	path := filepath.Join(regSelf, fmt.Sprintf("%06d-%s.json", regSeq, rec.Kind))
	b, _ := json.Marshal(rec)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return func() { os.Remove(path) }, nil
}

var reaped sync.Once

// reapOnce reaps what dead test processes left, once per test process, logging what it undid to t.
func reapOnce(t testing.TB) {
	t.Helper()
	reaped.Do(func() {
		for _, line := range Reap() {
			t.Log("e2e: undid a leftover of an earlier run: " + line)
		}
	})
}

// Reap undoes what the registered test processes that are no longer alive left behind, and returns one line per
// thing it undid or could not undo. Live processes' records (other packages' tests run at the same time) are
// left alone.
func Reap() []string {
	dir := registryDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return []string{fmt.Sprintf("reading the e2e registry %s: %v", dir, err)}
	}
	var report []string
	for _, e := range entries {
		pid, start, ok := registryOwner(e)
		if !ok {
			continue
		}
		if alive(pid, start) {
			continue
		}
		owner := filepath.Join(dir, e.Name())
		recs, err := readRecords(owner)
		if err != nil {
			report = append(report, fmt.Sprintf("reading %s: %v", owner, err))
			continue
		}
		failed := false
		for _, r := range recs {
			msg, err := undo(r)
			if err != nil {
				failed = true
				report = append(report, fmt.Sprintf("%s (left by pid %d): %v", msg, pid, err))
			} else if msg != "" {
				report = append(report, fmt.Sprintf("%s (left by pid %d)", msg, pid))
			}
		}
		if !failed {
			os.RemoveAll(owner)
		}
	}
	return report
}

// registryOwner returns the process id and start time a registry directory is named after ("PID-START").
func registryOwner(e fs.DirEntry) (pid int, start uint64, ok bool) {
	pidStr, startStr, ok := strings.Cut(e.Name(), "-")
	pid, err1 := strconv.Atoi(pidStr)
	start, err2 := strconv.ParseUint(startStr, 10, 64)
	return pid, start, e.IsDir() && ok && err1 == nil && err2 == nil
}

func readRecords(dir string) ([]record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var recs []record
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		recs = append(recs, r)
	}
	// Undo in kind order; within a kind, the last made first (a mount made on top of another comes off first).
	sort.SliceStable(recs, func(i, j int) bool {
		if kindOrder[recs[i].Kind] != kindOrder[recs[j].Kind] {
			return kindOrder[recs[i].Kind] < kindOrder[recs[j].Kind]
		}
		return i > j
	})
	return recs, nil
}

// undo undoes one record if it is still there; msg says what it did ("" when there was nothing to do).
func undo(r record) (msg string, err error) {
	switch r.Kind {
	case kindProcess:
		if !alive(r.PID, r.Start) {
			return "", nil
		}
		if r.Group {
			syscall.Kill(-r.PID, syscall.SIGKILL)
		}
		syscall.Kill(r.PID, syscall.SIGKILL)
		for deadline := time.Now().Add(20 * time.Second); alive(r.PID, r.Start); {
			if time.Now().After(deadline) {
				return "killing process " + strconv.Itoa(r.PID), errors.New("still running 20s after SIGKILL")
			}
			time.Sleep(50 * time.Millisecond)
		}
		return "killed process " + strconv.Itoa(r.PID), nil
	case kindMount:
		n := 0
		for mounted(r.Path) {
			if err := syscall.Unmount(r.Path, 0); err != nil {
				if err := syscall.Unmount(r.Path, syscall.MNT_DETACH); err != nil {
					return "unmounting " + r.Path, err
				}
			}
			n++
		}
		if n == 0 {
			return "", nil
		}
		return "unmounted " + r.Path, nil
	case kindLoop:
		if r.Dev == "" { // every loop device over r.Path (DetachLoopsOf); the file is not ours to remove
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := Run(ctx, "losetup", "--noheadings", "--output", "NAME", "-j", r.Path)
			if err != nil {
				return "listing the loop devices of " + r.Path, err
			}
			var done []string
			for _, dev := range strings.Fields(out) {
				msg, err := undo(record{Kind: kindLoop, Dev: dev, Path: r.Path, keepFile: true})
				if err != nil {
					return msg, err
				}
				done = append(done, msg)
			}
			return strings.Join(done, "; "), nil
		}
		backing, err := os.ReadFile("/sys/block/" + filepath.Base(r.Dev) + "/loop/backing_file")
		if err != nil || strings.TrimSpace(string(backing)) != r.Path {
			return "", nil // detached already, or reused for another file: not ours any more
		}
		for _, mp := range mountsOfDevice(r.Dev) {
			if err := syscall.Unmount(mp, 0); err != nil {
				if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
					return "unmounting " + mp + " (from " + r.Dev + ")", err
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := Run(ctx, "losetup", "-d", r.Dev); err != nil {
			return "detaching " + r.Dev, err
		}
		if !r.keepFile {
			os.Remove(r.Path)
		}
		return "detached " + r.Dev + " (" + r.Path + ")", nil
	case kindDir:
		if _, err := os.Lstat(r.Path); errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if mp := mountUnder(r.Path); mp != "" {
			return "removing " + r.Path, fmt.Errorf("%s is still mounted: not removing what it holds", mp)
		}
		if err := os.RemoveAll(r.Path); err != nil {
			return "removing " + r.Path, err
		}
		return "removed " + r.Path, nil
	case kindNetns:
		return undoNetns(r.Path)
	case kindLink:
		return undoLink(r.Dev, r.Ifindex)
	case kindCgroup:
		if _, err := os.Stat(r.Path); errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err := removeCgroupTree(r.Path); err != nil {
			return "removing cgroup " + r.Path, err
		}
		return "removed cgroup " + r.Path, nil
	case kindSysctl:
		return releaseSysctls()
	case kindEmptyDir:
		if err := os.Remove(r.Path); err != nil {
			return "", nil // gone, or not empty: another process's things are in it
		}
		return "removed the empty directory " + r.Path, nil
	}
	return "", fmt.Errorf("unknown record kind %q", r.Kind)
}

// processStart returns a process's start time in clock ticks since boot: field 22 of /proc/PID/stat.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 overall; f[0] is field 3
}

// alive reports whether the process pid runs and is the one that started at start (not a reuse of its id).
// A zombie counts as dead.
func alive(pid int, start uint64) bool {
	got, err := processStart(pid)
	if err != nil || got != start {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// mountinfoEntries returns this mount namespace's mount table (none when it cannot be read).
func mountinfoEntries() []mountinfo.Mount {
	mounts, _ := mountinfo.Read()
	return mounts
}

func mounted(path string) bool {
	for _, e := range mountinfoEntries() {
		if e.MountPoint == path {
			return true
		}
	}
	return false
}

// mountUnder returns a mount point at or below dir, or "".
func mountUnder(dir string) string {
	dir = filepath.Clean(dir)
	for _, e := range mountinfoEntries() {
		if e.MountPoint == dir || strings.HasPrefix(e.MountPoint, dir+"/") {
			return e.MountPoint
		}
	}
	return ""
}

// mountsOfDevice returns where the block device dev is mounted, the last mounted first.
func mountsOfDevice(dev string) []string {
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		return nil
	}
	var out []string
	for _, e := range mountinfoEntries() {
		if e.HasDevice() && e.Dev() == uint64(st.Rdev) {
			out = append([]string{e.MountPoint}, out...)
		}
	}
	return out
}
