//go:build e2e

package protokube_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// killRoundsEnv overrides how many SIGKILLs TestProtokubeSIGKILLMidRound makes (default: killRoundsBounded, or
// killRoundsSoak under KUBEUP_SOAK=1).
const (
	killRoundsEnv     = "KUBEUP_KILL_ROUNDS"
	killRoundsBounded = 4
	killRoundsSoak    = 60
)

// killFixture is one control-plane node of a local cluster whose protokube the test kills: its root, its
// configuration, the pool and the zone file protokube publishes to (the default zonefile provider).
type killFixture struct {
	bin, root, conf, pool, zoneFile string
	images                          []string
	vols                            *localtasks.Volumes // the pool as an observer sees it: who holds what
}

// TestProtokubeSIGKILLMidRound kills protokube (SIGKILL of its process group: mkfs, mount and losetup with it)
// at a random moment of the rounds that bring a node up (claiming its volumes, binding loop devices,
// formatting, mounting, writing node files and etcd's manifests, publishing to the zone file), then re-runs it
// to convergence, and checks that the node reached the state a clean run reaches: one claim per etcd cluster,
// each volume bound to one loop device and mounted once, manifests that parse and equal those of a clean run,
// DNS records once each, no temporary file left in the node's root, the pool or the zone's directory, no torn
// claim file even right after the kill, and the volumes' data (a marker file, the filesystem UUID) kept.
// Between kills the node is reset as a machine that lost its volumes: unmounted, claims released, manifests
// removed, another address.
//
// One reset in three also makes the volumes blank again, and the first of those kills (then half of them) lands
// right in mkfs: an mkfs.ext4 killed before it wrote its superblock leaves blocks in the volume's first MiB and
// no signature, which FormatAndMount formats again only because the volume still carries the format intent
// recorded before mkfs (tasks/nodetasks/formatintent.go); no intent is left once the node has converged.
func TestProtokubeSIGKILLMidRound(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "mkfs.ext4", "blkid", "mount", "umount")
	r := e2e.ChaosRand(t)
	kills := e2e.ChaosCount(t, killRoundsEnv, killRoundsBounded, killRoundsSoak)
	f := newKillFixture(t)
	data := newVolumeData(t, f.pool)
	ips := []string{"10.99.0.2", "10.99.0.3"}

	// A clean run first (it formats the volumes), and the manifests a clean run writes, for each address; then a
	// clean run on a reset node: how long the rounds that bring it up take (the window the kills land in).
	want := map[string]map[string]string{}
	f.cleanWindow(t, ips[0])
	f.converge(t, ips[0], data)
	want[ips[0]] = f.manifests(t)
	f.check(t, ips[0], want[ips[0]], data)
	f.reset(t, false, data)
	window := f.cleanWindow(t, ips[0])
	f.converge(t, ips[0], data)
	f.check(t, ips[0], want[ips[0]], data)
	t.Logf("a clean run on a reset node converges in %s: the kills land in that window", window.Round(time.Millisecond))

	stages := map[string]int{}
	begin := time.Now()
	for i := range kills {
		ip := ips[(i+1)%len(ips)]
		blank := i%3 == 0 // the volumes are new again: the kill may land in mkfs
		f.reset(t, blank, data)
		// Spread over the window, kill after kill, each at a random point of its own slice of it.
		at := time.Duration((float64(i) + r.Float64()) / float64(kills) * float64(window))
		trigger := "at a random moment"
		started := time.Now()
		p := f.start(t, ip, fmt.Sprintf("kill-%d", i))
		if blank && (i == 0 || r.IntN(2) == 0) {
			// Right in mkfs: once protokube runs it, within 150ms.
			at = f.waitChild(t, p, "mkfs.ext4", started) + time.Duration(r.Int64N(int64(150*time.Millisecond)))
			trigger = "in mkfs"
		}
		time.Sleep(at - time.Since(started))
		if err := p.Kill(); err != nil && !strings.Contains(err.Error(), "signal: killed") {
			t.Logf("kill %d: protokube: %v", i, err)
		}
		stage := f.stage(t)
		stages[stage]++
		t.Logf("kill %d: SIGKILL %s, %s after start (address %s, blank volumes %v): it had %s", i, trigger, at.Round(time.Millisecond), ip, blank, stage)
		f.checkNotTorn(t)
		if t.Failed() {
			t.Fatalf("kill %d: %s", i, e2e.Tail(p.Log, 30))
		}

		f.converge(t, ip, data)
		if want[ip] == nil {
			want[ip] = f.manifests(t)
		}
		f.check(t, ip, want[ip], data)
		if t.Failed() {
			t.Fatalf("after kill %d and a re-run (log of the killed run:\n%s)", i, e2e.Tail(p.Log, 30))
		}
	}
	t.Logf("%d kills and re-runs in %s, by what the killed run had done: %v", kills, time.Since(begin).Round(time.Millisecond), stages)
}

func newKillFixture(t *testing.T) *killFixture {
	t.Helper()
	bin := e2e.BuildBinaries(t, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/protokube")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	kubeup := func(args ...string) {
		t.Helper()
		out, err := exec.Command(filepath.Join(bin, "kubeup"), append(args, "--state", "file://"+state)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	kubeup("create", "cluster", "--name", cluster, "--cloud", "local", "--zones", "a", "--control-plane-count", "3", "--node-count", "0")
	kubeup("update", "cluster", cluster, "--yes")
	f := &killFixture{
		bin: bin, root: filepath.Join(dir, "node"), conf: filepath.Join(state, cluster, "nodeup", "control-plane-a-1"),
		pool: state + "-local/volumes", zoneFile: filepath.Join(state+"-local/dns", dnsZone+".zone"),
	}
	var err error
	f.images, err = filepath.Glob(filepath.Join(f.pool, "*.img"))
	if err != nil || len(f.images) != 6 {
		t.Fatalf("the pool holds %v (%v), want 6 volumes", f.images, err)
	}
	for _, img := range f.images {
		e2e.DetachLoopsOf(t, img) // runs after the unmounts registered below
	}
	// The node's volumes are released, kill after kill: a copy of their mounts that another test's mount
	// namespace made (`ip netns exec`) must not keep their devices busy.
	e2e.SharedMounts(t, f.root)
	for _, img := range f.images {
		e2e.Unmount(t, filepath.Join(f.root, "mnt", "master-"+volumeOf(img)))
	}
	if err := os.MkdirAll(f.root, 0o755); err != nil {
		t.Fatal(err)
	}
	f.vols = localtasks.NewVolumes(mustPool(t, f.pool), volumetasks.Holder{NodeID: "e2e-observer"}, 0)
	return f
}

func volumeOf(img string) string { return strings.TrimSuffix(filepath.Base(img), ".img") }

func (f *killFixture) args(ip string, extra ...string) []string {
	return append([]string{"--conf=" + f.conf, "--root=" + f.root, "--node-id=node1", "--internal-ip=" + ip, "--interval=1h", "--lease=2h"}, extra...)
}

// start starts the protokube daemon; its first round starts at once, and the rounds after one that attached or
// mounted follow at once.
func (f *killFixture) start(t *testing.T, ip, name string) *e2e.Process {
	t.Helper()
	cmd := exec.Command(filepath.Join(f.bin, "protokube"), f.args(ip)...)
	return e2e.StartProcess(t, cmd, filepath.Join(t.TempDir(), name+".log"))
}

// cleanWindow runs the protokube daemon on the node, as it is, until its second round ended (the first claims,
// attaches, formats and mounts; the second, which follows at once, writes the manifests and publishes the
// members' names), stops it, and returns how long that took: the window the kills land in.
func (f *killFixture) cleanWindow(t *testing.T, ip string) time.Duration {
	t.Helper()
	start := time.Now()
	p := f.start(t, ip, "clean")
	for {
		b, _ := os.ReadFile(p.Log)
		if strings.Count(string(b), " msg=round ") >= 2 {
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("a clean run did not end two rounds in 2 minutes:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	window := time.Since(start)
	p.Stop(10 * time.Second)
	return window
}

// waitChild waits until a process named comm runs in p's process group, and returns when that was, from p's
// start (started); up to 2 minutes.
func (f *killFixture) waitChild(t *testing.T, p *e2e.Process, comm string, started time.Time) time.Duration {
	t.Helper()
	pgid := p.Cmd.Process.Pid
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(2 * time.Millisecond) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ppid pgrp ...
			open, close := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
			if open < 0 || close < open {
				continue
			}
			fields := strings.Fields(string(b[close+1:]))
			if string(b[open+1:close]) == comm && len(fields) > 2 && fields[2] == strconv.Itoa(pgid) {
				return time.Since(started)
			}
		}
	}
	t.Fatalf("protokube ran no %s in 2 minutes", comm)
	return 0
}

// converge re-runs protokube (--once, as many rounds as it takes, at most 8) until a round changes nothing, then
// records the data of the volumes it mounted.
func (f *killFixture) converge(t *testing.T, ip string, data *volumeData) {
	t.Helper()
	var log strings.Builder
	for range 8 {
		out, err := exec.Command(filepath.Join(f.bin, "protokube"), f.args(ip, "--once")...).CombinedOutput()
		fmt.Fprintf(&log, "--- %v\n%s", err, out)
		if err == nil && strings.Contains(string(out), " changes=0 ") {
			for _, mp := range e2e.MountsUnder(filepath.Join(f.root, "mnt")) {
				data.mounted(t, strings.TrimPrefix(filepath.Base(mp), "master-"), mp)
			}
			return
		}
	}
	t.Fatalf("protokube --once did not converge in 8 rounds:\n%s", log.String())
}

// stage says what a killed run had done, from what it left: claims, loop devices, mounts, manifests.
func (f *killFixture) stage(t *testing.T) string {
	t.Helper()
	claims, _ := filepath.Glob(filepath.Join(f.pool, "*.claim"))
	loops, formatted, torn, intents := 0, 0, 0, 0
	for _, img := range f.images {
		loops += len(boundLoops(t, img))
		if out, err := exec.Command("blkid", "-p", "-s", "UUID", "-o", "value", img).Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
			formatted++
		} else if firstMiBWritten(img) {
			torn++ // an mkfs killed before its superblock: blocks, no signature
		}
		if node, err := f.vols.FormatIntent(context.Background(), volumeOf(img)); err == nil && node != "" {
			intents++
		}
	}
	manifests, _ := filepath.Glob(filepath.Join(f.root, manifests, "etcd-*.manifest"))
	return fmt.Sprintf("%d claims, %d loop devices, %d formatted, %d with blocks but no signature, %d format intents, %d mounts, %d etcd manifests",
		len(claims), loops, formatted, torn, intents, len(e2e.MountsUnder(filepath.Join(f.root, "mnt"))), len(manifests))
}

// firstMiBWritten reports whether the first MiB of img holds a byte that is not zero.
func firstMiBWritten(img string) bool {
	f, err := os.Open(img)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 1<<20)
	n, _ := f.ReadAt(head, 0)
	return strings.Trim(string(head[:n]), "\x00") != ""
}

// claimFile is the part of a claim file the test reads.
type claimFile struct {
	NodeID string `json:"nodeID"`
	Device string `json:"device"`
}

// readClaims reads every claim of the pool by volume; a claim that does not parse fails t (a torn claim).
func (f *killFixture) readClaims(t *testing.T) map[string]claimFile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(f.pool, "*.claim"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]claimFile{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var c claimFile
		if err := json.Unmarshal(b, &c); err != nil || c.NodeID == "" {
			t.Errorf("torn claim %s (%v): %q", file, err, b)
			continue
		}
		out[strings.TrimSuffix(filepath.Base(file), ".claim")] = c
	}
	return out
}

// checkNotTorn checks, right after a kill, that every claim file and manifest there is whole.
func (f *killFixture) checkNotTorn(t *testing.T) {
	t.Helper()
	f.readClaims(t)
	if _, err := f.vols.List(context.Background(), nil); err != nil {
		t.Errorf("listing the pool right after the kill: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(f.root, manifests, "*.manifest"))
	for _, file := range files {
		if err := parseManifest(file); err != nil {
			t.Errorf("right after the kill: %v", err)
		}
	}
	if err := e2e.VolumesMountedTwice(f.root); err != nil {
		t.Error(err)
	}
}

// manifests reads the node's static-pod manifests by file name; each must parse.
func (f *killFixture) manifests(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(f.root, manifests, "*.manifest"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, file := range files {
		if err := parseManifest(file); err != nil {
			t.Error(err)
		}
		b, _ := os.ReadFile(file)
		out[filepath.Base(file)] = string(b)
	}
	return out
}

// parseManifest checks that file is a whole Pod: it parses, and names its kind and a container with a command.
func parseManifest(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var pod struct {
		Kind string `json:"kind"`
		Spec struct {
			Containers []struct {
				Command []string `json:"command"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pod); err != nil || pod.Kind != "Pod" || len(pod.Spec.Containers) == 0 || len(pod.Spec.Containers[0].Command) == 0 {
		return fmt.Errorf("manifest %s is not a whole Pod (%v):\n%s", file, err, b)
	}
	return nil
}

// check checks the state of a node that converged with address ip: see TestProtokubeSIGKILLMidRound.
func (f *killFixture) check(t *testing.T, ip string, wantManifests map[string]string, data *volumeData) {
	t.Helper()
	ctx := context.Background()
	claims := f.readClaims(t)
	byCluster := map[string][]string{}
	for vol, c := range claims {
		if c.NodeID != "node1" {
			t.Errorf("volume %s is claimed by %s", vol, c.NodeID)
		}
		_, rest, _ := strings.Cut(vol, ".")
		byCluster[strings.SplitN(rest, ".", 2)[0]] = append(byCluster[strings.SplitN(rest, ".", 2)[0]], vol)
	}
	if len(claims) != 2 || len(byCluster["etcd-main"]) != 1 || len(byCluster["etcd-events"]) != 1 {
		t.Errorf("claims %v: want one volume of each etcd cluster", claims)
	}
	var wantMounts []string
	for _, img := range f.images {
		vol := volumeOf(img)
		loops := boundLoops(t, img)
		c, claimed := claims[vol]
		switch {
		case claimed && (len(loops) != 1 || loops[0] != c.Device):
			t.Errorf("volume %s (claimed as %s) is bound to the loop devices %v: want its device only", vol, c.Device, loops)
		case !claimed && len(loops) != 0:
			t.Errorf("volume %s, not claimed, is bound to the loop devices %v", vol, loops)
		}
		if claimed {
			wantMounts = append(wantMounts, filepath.Join(f.root, "mnt", "master-"+vol))
		}
		if node, err := f.vols.FormatIntent(ctx, vol); err != nil || node != "" {
			t.Errorf("volume %s still carries the format intent of %q (%v) after the node converged", vol, node, err)
		}
	}
	slices.Sort(wantMounts)
	gotMounts := e2e.MountsUnder(f.root)
	slices.Sort(gotMounts)
	if diff := cmp.Diff(wantMounts, gotMounts); diff != "" {
		t.Errorf("mounts under the node's root (-want +got):\n%s", diff)
	}
	if err := e2e.VolumesMountedTwice(f.root); err != nil {
		t.Error(err)
	}
	if diff := cmp.Diff(wantManifests, f.manifests(t)); diff != "" {
		t.Errorf("manifests after the re-run, against those of a clean run (-want +got):\n%s", diff)
	}
	if left, err := e2e.TempFilesLeft(f.root, f.pool, filepath.Dir(f.zoneFile)); err != nil || len(left) > 0 {
		t.Errorf("temporary files left behind: %v %v", left, err)
	}
	zone, err := localtasks.NewZoneFile(f.zoneFile, dnsZone)
	if err != nil {
		t.Fatal(err)
	}
	sets, err := zone.List(ctx)
	if err != nil {
		t.Fatalf("reading the zone file: %v", err)
	}
	got := map[string][]string{}
	for _, rs := range sets {
		if rs.Type != "A" {
			continue
		}
		key := strings.TrimSuffix(rs.Name, ".")
		if _, dup := got[key]; dup {
			t.Errorf("two A record sets for %s in %s", key, f.zoneFile)
		}
		got[key] = slices.Sorted(slices.Values(rs.Values))
	}
	wantRecords := map[string][]string{
		"api.internal." + cluster:             {"203.0.113.123"}, // no kube-apiserver is ready: the placeholder stays
		"api." + cluster:                      {"203.0.113.123"},
		"a-1.etcd-main.internal." + cluster:   {ip},
		"a-1.etcd-events.internal." + cluster: {ip},
	}
	for name, values := range wantRecords {
		if diff := cmp.Diff(values, got[name]); diff != "" {
			t.Errorf("zone file %s A (-want +got):\n%s", name, diff)
		}
	}
	data.check(t, e2e.MountsOfFile)
	out, err := exec.Command(filepath.Join(f.bin, "protokube"), f.args(ip, "--once", "--dryrun")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "No changes") {
		t.Errorf("protokube --once --dryrun after the re-run: %v\n%s", err, out)
	}
}

// reset makes the node a machine that lost its volumes: unmounted, claims released (loop devices unbound),
// etcd manifests removed; with blank, each volume's image is made new (zeros), and its data forgotten.
func (f *killFixture) reset(t *testing.T, blank bool, data *volumeData) {
	t.Helper()
	ctx := context.Background()
	for _, mp := range e2e.MountsUnder(filepath.Join(f.root, "mnt")) {
		if out, err := exec.Command("umount", mp).CombinedOutput(); err != nil {
			t.Fatalf("umount %s: %v\n%s", mp, err, out)
		}
	}
	for _, img := range f.images {
		vol := volumeOf(img)
		e2e.WaitFor(t, 30*time.Second, "the release of "+vol, func() (error, bool) {
			err := f.vols.Release(ctx, vol)
			return err, err == nil
		})
		if blank {
			if len(boundLoops(t, img)) > 0 {
				t.Fatalf("%s is still bound after its release", img)
			}
			st, err := os.Stat(img)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(img, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(img, st.Size()); err != nil {
				t.Fatal(err)
			}
			data.forget(vol)
		}
	}
	old, _ := filepath.Glob(filepath.Join(f.root, manifests, "etcd-*.manifest"))
	for _, m := range old {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
}

// boundLoops lists the loop devices bound to the image img.
func boundLoops(t *testing.T, img string) []string {
	t.Helper()
	out, err := exec.Command("losetup", "--noheadings", "--output", "NAME", "-j", img).Output()
	if err != nil {
		t.Fatalf("losetup -j %s: %v", img, err)
	}
	devs := strings.Fields(string(out))
	slices.Sort(devs)
	return devs
}
