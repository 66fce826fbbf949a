//go:build e2e

package protokube_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/staticpods"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// chaosEventsEnv overrides how many events TestProtokubeChaos makes (default: chaosEventsBounded, or
// chaosEventsSoak under KUBEUP_SOAK=1).
const (
	chaosEventsEnv     = "KUBEUP_CHAOS_EVENTS"
	chaosEventsBounded = 4
	chaosEventsSoak    = 200
	// chaosLease is the nodes' --lease: how long a dead node's claims hold when nobody releases them.
	chaosLease = 8 * time.Second
	// chaosConverge bounds the wait for the cluster to settle after one event.
	chaosConverge = 3 * time.Minute
)

// chaosNode is one control-plane node of TestProtokubeChaos: a network namespace (a new one when the machine
// is replaced), a filesystem root (kept across restarts), its protokube and the stand-in for its kubelet.
type chaosNode struct {
	id, root, conf string
	gen            int
	net            *e2e.NetNode
	proc           *e2e.Process
	kubelet        *e2e.FakeKubelet
	alive          bool
}

// chaosRun is the cluster of TestProtokubeChaos and what the test knows of it.
type chaosRun struct {
	t       *testing.T
	r       *rand.Rand
	bin     string
	nw      *e2e.Net
	bind    *e2e.BIND
	pool    string
	images  []string
	vols    *localtasks.Volumes // the pool as an observer sees it
	nodes   []*chaosNode
	roots   []string
	client  *e2e.NetNode // where etcdctl runs: never killed
	tls     []string
	data    *volumeData
	keys    map[string]string // every key written to etcd main, with its value
	secret  string
	history []string
}

// TestProtokubeChaos: four control-plane nodes (network namespaces) share one local pool of three member
// volumes per etcd cluster; each runs protokube (--interval 1s, --lease 8s, publishing to a real BIND by RFC
// 2136) and a stand-in kubelet running Debian's etcd from the etcd-main manifest protokube writes. Then random,
// seeded events: SIGKILL of a node's protokube (restarted at once, as systemd does), SIGKILL of a node's etcd
// (the kubelet restarts it), a node's death (protokube and etcd killed, its mounts gone; its claims released as a
// cloud detaches a dead machine's disks, or left to lapse; sometimes its network namespace deleted too, the
// machine replaced by one with a new address and an empty disk), and a dead node's restart. After every event,
// before and after the cluster settles: no volume mounted twice (on two nodes, at two points, through two loop
// devices; a watch of the mount table also runs all along), no image bound to two loop devices, no volume
// formatted that held data (the marker written at its first mount reads back, its filesystem UUID is unchanged);
// once it settled, every key written to etcd through the members' DNS names reads back, and a few more are
// written.
func TestProtokubeChaos(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "etcd", "etcdctl", "dig", "named", "losetup", "mkfs.ext4", "blkid", "debugfs", "ip", "unshare")
	c := &chaosRun{t: t, r: e2e.ChaosRand(t), keys: map[string]string{}}
	events := e2e.ChaosCount(t, chaosEventsEnv, chaosEventsBounded, chaosEventsSoak)
	begin := time.Now()
	c.setup()
	t.Logf("set up (binaries, BIND, the cluster's volumes, five network namespaces) in %s", time.Since(begin).Round(time.Millisecond))
	for _, n := range c.nodes {
		c.startNode(n)
	}
	start := time.Now()
	c.settle("the first start")
	c.copyClientPKI()
	c.checkKeys("the first start")
	t.Logf("the cluster came up in %s", time.Since(start).Round(time.Millisecond))

	for i := 0; i < events; i++ {
		start := time.Now()
		what := c.event()
		c.history = append(c.history, what)
		c.checkSafety(what + ", at once")
		c.wake()
		// Now and then the next event comes while the cluster is still busy with this one (a volume changing
		// hands, etcd restarting): at a random moment of the next 3s, before it settles.
		for i+1 < events && c.r.IntN(3) == 0 {
			time.Sleep(time.Duration(c.r.Int64N(int64(3 * time.Second))))
			c.checkSafety(what + ", unsettled")
			i++
			next := c.event()
			c.history = append(c.history, next+" (unsettled)")
			what += ", then " + next + " before it settled"
			c.checkSafety(what + ", at once")
			c.wake()
		}
		c.settle(what)
		c.checkSafety(what + ", settled")
		c.checkKeys(what)
		t.Logf("event %d: %s: settled and checked in %s", i, what, time.Since(start).Round(time.Millisecond))
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d events, %d keys read back after each", events, len(c.keys))
}

func (c *chaosRun) setup() {
	t := c.t
	c.bin = e2e.BuildBinaries(t, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/protokube")
	c.nw = e2e.Network(t)
	c.bind = e2e.StartBINDOn(t, dnsZone, c.nw.Gateway, 53)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	kubeup := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(c.bin, "kubeup"), append(args, "--state", "file://"+state)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	create := []string{"create", "cluster", "--name", cluster, "--cloud", "local", "--zones", "a", "--control-plane-count", "3", "--node-count", "0"}
	spec := kubeup(append(create, "--dry-run", "-o", "yaml")...)
	specFile := filepath.Join(dir, "spec.yaml")
	e2e.WriteFile(t, specFile, e2e.WithRFC2136(t, spec, c.bind, c.nw.Gateway+":53", secretAt))
	kubeup(create...)
	kubeup("replace", "-f", specFile)
	kubeup("update", "cluster", cluster, "--yes")

	c.pool = state + "-local/volumes"
	var err error
	c.images, err = filepath.Glob(filepath.Join(c.pool, "*.img"))
	if err != nil || len(c.images) != 6 {
		t.Fatalf("the pool holds %v (%v), want 6 volumes", c.images, err)
	}
	for _, img := range c.images {
		e2e.DetachLoopsOf(t, img) // runs after the unmounts registered below
	}
	c.secret = c.bind.KeySecret + "\n"
	for i := 1; i <= 4; i++ {
		n := &chaosNode{id: "node" + strconv.Itoa(i), root: filepath.Join(dir, "node"+strconv.Itoa(i))}
		// The fourth node runs the first group's configuration: it is the spare of zone a.
		n.conf = filepath.Join(state, cluster, "nodeup", "control-plane-a-"+strconv.Itoa(min(i, 3)))
		n.net = c.nw.Node(t, n.id)
		n.net.SetResolver(c.nw.Gateway)
		e2e.WriteFile(t, filepath.Join(n.root, secretAt), c.secret)
		for _, img := range c.images {
			e2e.Unmount(t, filepath.Join(n.root, "mnt", "master-"+volumeOf(img)))
		}
		c.nodes = append(c.nodes, n)
		c.roots = append(c.roots, n.root)
	}
	c.client = c.nw.Node(t, "client")
	c.client.SetResolver(c.nw.Gateway)
	c.vols = localtasks.NewVolumes(mustPool(t, c.pool), volumetasks.Holder{NodeID: "e2e-observer"}, 0)
	c.data = newVolumeData(t, c.pool)
	watch := e2e.NeverMountedTwice(t, c.roots...)
	t.Cleanup(func() {
		if watch.Checks() == 0 {
			t.Error("the mount watch never looked")
		}
	})
	t.Cleanup(func() { // before the processes' own cleanups: their logs are still there
		if !t.Failed() {
			return
		}
		t.Logf("events: %s", strings.Join(c.history, "; "))
		for _, n := range c.nodes {
			if n.proc != nil {
				t.Logf("%s (alive %v) protokube log:\n%s", n.id, n.alive, e2e.Tail(n.proc.Log, 30))
			}
			if n.kubelet != nil {
				for _, p := range n.kubelet.Pods() {
					t.Logf("%s %s (pid %d, %d starts, %s):\n%s", n.id, p.Manifest, p.PID, p.Starts, p.LastError, e2e.Tail(p.Log, 15))
				}
			}
		}
	})
}

// onlyEtcdMain has the stand-in kubelet run etcd main only: the events cluster's volumes are claimed, formatted
// and mounted all the same, and its manifests written, but one etcd per node is what two cores can afford.
func onlyEtcdMain(cfg *staticpods.Config) {
	cfg.Only = func(manifest string) bool { return manifest == "etcd-main.manifest" }
}

// startNode boots a node: a new network namespace if its former one is gone, its kubelet, then protokube.
func (c *chaosRun) startNode(n *chaosNode) {
	t := c.t
	if n.net == nil {
		n.gen++
		n.net = c.nw.Node(t, n.id+"-"+strconv.Itoa(n.gen))
		n.net.SetResolver(c.nw.Gateway)
	}
	n.kubelet = e2e.RunStaticPods(t, n.net, n.root, manifests, onlyEtcdMain)
	c.startProtokube(n)
	n.alive = true
}

func (c *chaosRun) startProtokube(n *chaosNode) {
	// protokube runs in the host's mount namespace (the node's mounts are under its root) and reaches BIND on
	// the bridge; its node's address is a flag.
	cmd := exec.Command(filepath.Join(c.bin, "protokube"), "--conf="+n.conf, "--root="+n.root, "--node-id="+n.id,
		"--internal-ip="+n.net.IP, "--interval=1s", "--lease="+chaosLease.String())
	n.proc = n.net.Start(c.t, cmd, filepath.Join(c.t.TempDir(), n.id+"-protokube.log"))
}

// wake starts a round at once (SIGHUP) on every live node whose protokube has logged (a SIGHUP before the Go
// runtime installed its handler would end the process; a protokube that just started runs a round anyway).
func (c *chaosRun) wake() {
	for _, n := range c.nodes {
		if !n.alive {
			continue
		}
		if st, err := os.Stat(n.proc.Log); err == nil && st.Size() > 0 {
			syscall.Kill(n.proc.Cmd.Process.Pid, syscall.SIGHUP)
		}
	}
}

func (c *chaosRun) alive() (alive, dead []*chaosNode) {
	for _, n := range c.nodes {
		if n.alive {
			alive = append(alive, n)
		} else {
			dead = append(dead, n)
		}
	}
	return alive, dead
}

// event makes one random event happen, and says what it was. At least two nodes stay alive: enough for etcd
// main's quorum once the cluster settles.
func (c *chaosRun) event() string {
	t := c.t
	alive, dead := c.alive()
	kinds := []string{"kill-protokube", "kill-protokube", "kill-etcd", "kill-etcd"}
	if len(alive) > 2 {
		kinds = append(kinds, "die", "die", "die")
	}
	if len(dead) > 0 {
		kinds = append(kinds, "restart", "restart", "restart")
	}
	switch kind := kinds[c.r.IntN(len(kinds))]; kind {
	case "kill-protokube":
		n := alive[c.r.IntN(len(alive))]
		if err := n.proc.Kill(); err != nil && !strings.Contains(err.Error(), "killed") {
			t.Logf("%s: protokube: %v", n.id, err)
		}
		c.startProtokube(n)
		return "SIGKILL of " + n.id + "'s protokube, restarted"
	case "kill-etcd":
		var running []*chaosNode
		for _, n := range alive {
			if p, ok := n.kubelet.Pod("etcd-main.manifest"); ok && p.PID != 0 {
				running = append(running, n)
			}
		}
		if len(running) == 0 { // the cluster has not settled: none runs at this moment
			n := alive[c.r.IntN(len(alive))]
			n.proc.Kill()
			c.startProtokube(n)
			return "SIGKILL of " + n.id + "'s protokube (no etcd ran), restarted"
		}
		n := running[c.r.IntN(len(running))]
		p, _ := n.kubelet.Pod("etcd-main.manifest")
		if err := e2e.KillGroup(p.PID); err != nil {
			t.Fatal(err)
		}
		return "SIGKILL of " + n.id + "'s etcd"
	case "die":
		n := alive[c.r.IntN(len(alive))]
		modes := []string{"released", "lapsing", "released, network gone", "lapsing, network gone"}
		mode := modes[c.r.IntN(len(modes))]
		c.die(n, strings.HasPrefix(mode, "released"), strings.HasSuffix(mode, "network gone"))
		return fmt.Sprintf("%s dies (claims %s)", n.id, mode)
	default:
		n := dead[c.r.IntN(len(dead))]
		c.startNode(n)
		return fmt.Sprintf("%s restarts (address %s)", n.id, n.net.IP)
	}
}

// die kills a node as a machine dies: protokube and etcd killed, the kubelet gone, its mounts gone; with
// release, its volumes are detached and their claims released (what a cloud does for a dead instance), else
// their claims lapse after chaosLease; with gone, its network namespace is deleted too, and the machine is
// replaced by one with an empty disk (a new namespace and address when it restarts).
func (c *chaosRun) die(n *chaosNode, release, gone bool) {
	t := c.t
	ctx := context.Background()
	n.proc.Kill()
	for _, p := range n.kubelet.Pods() {
		if p.PID != 0 {
			e2e.KillGroup(p.PID)
		}
	}
	n.kubelet.Stop() // no pod runs: the kubelet's restart waits at least 1s
	n.alive = false
	if gone {
		if err := n.net.Remove(); err != nil {
			t.Fatal(err)
		}
		n.net = nil
	}
	held := holdersOf(t, c.vols)
	for _, mp := range e2e.MountsUnder(filepath.Join(n.root, "mnt")) {
		if out, err := exec.Command("umount", mp).CombinedOutput(); err != nil {
			t.Fatalf("unmounting %s of the dead node %s: %v\n%s", mp, n.id, err, out)
		}
	}
	if release {
		for _, vol := range slices.Sorted(maps.Keys(held)) {
			if held[vol] != n.id {
				continue
			}
			// The mounts of the dead etcd's mount namespace go a moment after its process: until then the
			// device is in use, and Release refuses it.
			// Meanwhile the claim may lapse (the dead node renews it no more) and a live node take the volume
			// over: then it is that node's, and the cloud detaches nothing of it.
			e2e.WaitFor(t, 30*time.Second, "the release of the dead node's claim of "+vol, func() (error, bool) {
				if holdersOf(t, c.vols)[vol] != n.id {
					return nil, true
				}
				err := c.vols.Release(ctx, vol)
				return err, err == nil
			})
		}
	}
	if gone {
		if left := e2e.MountsUnder(n.root); len(left) > 0 {
			t.Fatalf("%s still has mounts %v: not wiping its disk", n.id, left)
		}
		if err := os.RemoveAll(n.root); err != nil {
			t.Fatal(err)
		}
		e2e.WriteFile(t, filepath.Join(n.root, secretAt), c.secret)
	}
}

// checkSafety checks what must hold at every moment: no volume mounted twice, no image bound to two loop
// devices (a claimant unbinds the former holder's before it binds its own), no volume formatted.
func (c *chaosRun) checkSafety(when string) {
	t := c.t
	t.Helper()
	if err := e2e.VolumesMountedTwice(c.roots...); err != nil {
		t.Errorf("%s: %v", when, err)
	}
	for _, img := range c.images {
		if loops := boundLoops(t, img); len(loops) > 1 {
			t.Errorf("%s: volume %s is bound to %d loop devices: %v", when, volumeOf(img), len(loops), loops)
		}
	}
	c.data.check(t)
}

// settle waits until the cluster is what it should be with the live nodes it has: min(3, live nodes) volumes of
// each etcd cluster held by live nodes, each mounted once, on its holder; etcd main running on each holder from
// the manifest protokube wrote, its member's name in DNS pointing at the holder. Volumes seen mounted for the
// first time get their marker.
func (c *chaosRun) settle(what string) {
	t := c.t
	t.Helper()
	deadline := time.Now().Add(chaosConverge)
	for {
		why := c.settled()
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: the cluster did not settle in %s: %s", what, chaosConverge, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, img := range c.images {
		if mps := e2e.MountsOfFile(img); len(mps) == 1 {
			c.data.mounted(t, volumeOf(img), mps[0])
		}
	}
}

// settled says why the cluster has not settled yet; "" when it has.
func (c *chaosRun) settled() string {
	t := c.t
	alive, _ := c.alive()
	byID := map[string]*chaosNode{}
	for _, n := range alive {
		byID[n.id] = n
	}
	for _, n := range alive {
		select {
		case <-n.proc.Done():
			t.Fatalf("%s's protokube exited: %v\n%s", n.id, n.proc.Err(), e2e.Tail(n.proc.Log, 30))
		default:
		}
	}
	held := holdersOf(t, c.vols)
	count := map[string]int{}
	for _, img := range c.images {
		vol := volumeOf(img)
		n := byID[held[vol]]
		if n == nil {
			continue
		}
		count[etcdClusterOf(vol)]++
		want := []string{filepath.Join(n.root, "mnt", "master-"+vol)}
		if got := e2e.MountsOfFile(img); !slices.Equal(got, want) {
			return fmt.Sprintf("volume %s, held by %s, is mounted at %v", vol, n.id, got)
		}
		if etcdClusterOf(vol) != "etcd-main" {
			continue
		}
		if p, ok := n.kubelet.Pod("etcd-main.manifest"); !ok || p.PID == 0 {
			return fmt.Sprintf("etcd main does not run on %s, which holds %s", n.id, vol)
		}
		member := strings.SplitN(vol, ".", 2)[0]
		name := member + ".etcd-main.internal." + cluster
		out, _ := exec.Command("dig", "+short", "+time=1", "+tries=1", "@"+c.nw.Gateway, name, "A").Output()
		if got := strings.Fields(string(out)); !slices.Equal(got, []string{n.net.IP}) {
			return fmt.Sprintf("%s resolves to %v, want %s's address %s", name, got, n.id, n.net.IP)
		}
	}
	want := min(3, len(alive))
	if count["etcd-main"] != want || count["etcd-events"] != want {
		return fmt.Sprintf("the live nodes hold %v, want %d volumes of each etcd cluster (holders %v)", count, want, held)
	}
	return ""
}

// etcdClusterOf is the etcd cluster a volume ID names: "a-1.etcd-main.demo.example.com" → "etcd-main".
func etcdClusterOf(vol string) string {
	parts := strings.SplitN(vol, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// copyClientPKI copies etcd's client certificate (kube-apiserver's, which protokube writes on every node) out of
// a node's root: a node's disk may be wiped later.
func (c *chaosRun) copyClientPKI() {
	t := c.t
	dir := t.TempDir()
	pki := filepath.Join(c.nodes[0].root, "srv/kubernetes/kube-apiserver")
	for _, f := range []string{"etcd-ca.crt", "etcd-client.crt", "etcd-client.key"} {
		b, err := os.ReadFile(filepath.Join(pki, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c.tls = []string{"--cacert=" + dir + "/etcd-ca.crt", "--cert=" + dir + "/etcd-client.crt", "--key=" + dir + "/etcd-client.key"}
}

// etcdctl runs etcdctl in the client's namespace against etcd main through its members' DNS names.
func (c *chaosRun) etcdctl(args ...string) (string, error) {
	var eps []string
	for _, m := range []string{"a-1", "a-2", "a-3"} {
		eps = append(eps, fmt.Sprintf("https://%s.etcd-main.internal.%s:4001", m, cluster))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.client.Run(ctx, "etcdctl", append(append([]string{"--endpoints=" + strings.Join(eps, ","), "--dial-timeout=2s", "--command-timeout=8s"}, c.tls...), args...)...)
}

// checkKeys writes three keys for this event (retrying until etcd has quorum again), then reads every key
// written so far back, with its value: a linearizable read, so a key missing is a key lost.
func (c *chaosRun) checkKeys(what string) {
	t := c.t
	t.Helper()
	base := len(c.keys)
	for k := range 3 {
		key, value := fmt.Sprintf("chaos/%05d", base+k), fmt.Sprintf("%s #%d", what, k)
		e2e.WaitFor(t, chaosConverge, "etcd main to take key "+key+" (quorum) after "+what, func() (string, bool) {
			out, err := c.etcdctl("put", key, value)
			return fmt.Sprintf("%s %v", out, err), err == nil
		})
		c.keys[key] = value
	}
	out, err := c.etcdctl("get", "chaos/", "--prefix")
	if err != nil {
		t.Fatalf("after %s: reading the keys back: %v", what, err)
	}
	got := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		got[lines[i]] = lines[i+1]
	}
	if diff := cmp.Diff(c.keys, got); diff != "" {
		t.Errorf("after %s: etcd main's keys (-want +got):\n%s", what, diff)
	}
}
