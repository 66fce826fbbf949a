package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What the chaos tests (random kills, seeded) share: their seed and length, a strict look at the mount table, the
// temporary files a killed writer may leave, and the end of a node's network namespace.

// SoakEnv names the environment variable that asks for the long versions of the reliability tests
// (KUBEUP_SOAK=1, as `make soak` sets it); without it they run a bounded version that fits `make test`.
const SoakEnv = "KUBEUP_SOAK"

// ChaosSeedEnv names the environment variable that replays a chaos test: its seed, as the failed run logged it.
const ChaosSeedEnv = "KUBEUP_CHAOS_SEED"

// Soak reports whether the long versions of the reliability tests were asked for (KUBEUP_SOAK set, not 0/false).
func Soak() bool {
	v := strings.ToLower(os.Getenv(SoakEnv))
	return v != "" && v != "0" && v != "false"
}

// ChaosRand returns the random source of a chaos test, seeded with KUBEUP_CHAOS_SEED when set (to replay a
// failure), else with a new seed; the seed is logged, and named again if the test fails.
func ChaosRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(ChaosSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want the decimal seed a chaos test logged", ChaosSeedEnv, s)
		}
		seed = v
	}
	t.Logf("chaos seed %d (replay with %s=%d)", seed, ChaosSeedEnv, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the chaos seed of this failed run was %d: replay it with %s=%d", seed, ChaosSeedEnv, seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// ChaosCount is how many events a chaos test runs: the environment variable env when set (a positive number),
// else soak under KUBEUP_SOAK=1, else bounded (what `make test` runs).
func ChaosCount(t testing.TB, env string, bounded, soak int) int {
	t.Helper()
	if s := os.Getenv(env); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number of events", env, s)
		}
		return n
	}
	if Soak() {
		return soak
	}
	return bounded
}

// VolumesMountedTwice reads this process's mount table now and returns an error naming every volume mounted
// at more than one mount point under the roots (node roots: each a directory of the host): the same device at
// two points, or one file mounted through two loop devices (a pool volume bound twice), on one node or on two.
// It is stricter than NeverMountedTwice, which allows one node to mount a volume twice; a node's protokube
// mounts each volume once.
func VolumesMountedTwice(roots ...string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	clean := make([]string, len(roots))
	for i, r := range roots {
		clean[i] = filepath.Clean(r)
	}
	return mountedMoreThanOnce(hostPlaced(string(b), clean, loopBacking))
}

// VolumesMountedTwiceOn is VolumesMountedTwice for machines, each with a mount table of its own: it names
// every volume mounted more than once under the Dir of the machines, on one or on two.
func VolumesMountedTwiceOn(nodes []NodeMounts) error {
	return mountedMoreThanOnce(machinePlaced(nodes, loopBacking))
}

// mountedMoreThanOnce returns an error naming each volume of mounts mounted at more than one point.
func mountedMoreThanOnce(mounts []placedMount) error {
	at := map[string][]string{} // volume → its mount points
	for _, m := range mounts {
		at[m.volume] = append(at[m.volume], m.at+" ("+m.node+")")
	}
	var errs []error
	for _, v := range slices.Sorted(maps.Keys(at)) {
		if len(at[v]) > 1 {
			errs = append(errs, fmt.Errorf("%s is mounted %d times: at %s", v, len(at[v]), strings.Join(at[v], ", ")))
		}
	}
	return errors.Join(errs...)
}

// MountsUnder returns the mount points at or under dir in this process's mount table, deepest first (the order
// to unmount them in). SharedMounts' own mounts are left out: they are the harness's, not a node's.
func MountsUnder(dir string) []string {
	dir = filepath.Clean(dir)
	var out []string
	for _, e := range mountinfoEntries() {
		if _, ok := sharedMountDirs.Load(e.MountPoint); ok {
			continue
		}
		if e.MountPoint == dir || strings.HasPrefix(e.MountPoint, dir+"/") {
			out = append(out, e.MountPoint)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out)
}

// atomicTemp matches the temporary files of kubeup's atomic writes (".NAME.tmp-DIGITS": nodetasks, localtasks'
// claims, sidecars and zone files).
var atomicTemp = regexp.MustCompile(`^\..+\.tmp-[0-9a-z]+$`)

// TempFilesLeft returns the temporary files of kubeup's atomic writes (".NAME.tmp-DIGITS") under each of dirs,
// recursively: what a killed writer leaves behind until a later write cleans it.
func TempFilesLeft(dirs ...string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.IsDir() && atomicTemp.MatchString(d.Name()) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// KillGroup sends SIGKILL to the process group pid leads (a Process, a FakePod's PID): a crash, with no
// chance to clean up. A group that is gone already is not an error.
func KillGroup(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("no process group %d", pid)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGKILL to process group %d: %w", pid, err)
	}
	return nil
}

// Remove ends the node as a dead machine's network goes: every process in its network namespace is killed and
// the namespace is deleted, with its end of the veth pair (the host's end goes with it). The test's cleanup then
// finds nothing to do. A node removed is not reused: make another with Net.Node and another name.
func (n *NetNode) Remove() error {
	if msg, err := undoNetns(n.nsPath()); err != nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return nil
}

// StartProcess starts cmd on the host (not in a network namespace) in a process group of its own, its output
// appended to logFile, registered for the next run's reap; it is stopped (Stop(5s)) in t.Cleanup. Kill is a
// SIGKILL of its group.
func StartProcess(t testing.TB, cmd *exec.Cmd, logFile string) *Process {
	t.Helper()
	p, err := startProcess(cmd, logFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
	return p
}

// MountsOfFile returns the mount points, in this process's mount table, of the filesystems on loop devices bound
// to the file img (a pool volume's image).
func MountsOfFile(img string) []string {
	img = filepath.Clean(img)
	rememberLoopFile(img)
	var out []string
	for _, m := range mountinfoEntries() {
		if m.HasDevice() && loopBacking(m.Number()) == img {
			out = append(out, m.MountPoint)
		}
	}
	return out
}

// MachineMount is a mount of a volume in a machine's mount namespace.
type MachineMount struct {
	// Node is the machine's NodeMounts.Node.
	Node string
	// At is the mount point, as the machine sees it.
	At string
}

// MountsOfFileOn returns the mounts under the machines' Dir of the filesystems on loop devices bound to the file
// img (a pool volume's image).
func MountsOfFileOn(nodes []NodeMounts, img string) []MachineMount {
	want := "loop file " + filepath.Clean(img)
	rememberLoopFile(img)
	var out []MachineMount
	for _, n := range nodes {
		for _, m := range machinePlaced([]NodeMounts{n}, loopBacking) {
			if m.volume == want {
				out = append(out, MachineMount{Node: n.Node, At: m.at})
			}
		}
	}
	return out
}
