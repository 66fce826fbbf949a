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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/e2e"
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

// chaosRun is the cluster of TestProtokubeChaos and what the test knows of it.
type chaosRun struct {
	t        *testing.T
	r        *rand.Rand
	bin      string
	nw       *e2e.Net
	bind     *e2e.BIND
	machines *etcdMachines
	pool     string
	images   []string
	vols     *localtasks.Volumes // the pool as an observer sees it
	nodes    []*etcdMachine
	client   *e2e.NetNode // where etcdctl runs: never killed
	tls      []string
	data     *volumeData
	keys     map[string]string // every key written to etcd main, with its value
	history  []string
}

// TestProtokubeChaos: four control-plane nodes, each a machine of its own (etcdMachine: systemd in
// systemd-nspawn in a network namespace), share one local pool of three member volumes per etcd cluster; each
// runs protokube.service (--interval 1s, --lease 8s, publishing to a real BIND by RFC 2136) and a real kubelet on
// containerd running etcd in containers from the manifests protokube writes. Then random, seeded events: SIGKILL
// of a node's protokube (systemd restarts it), SIGKILL of a node's etcd main (kubelet restarts it), a node's
// death (its machine killed: its mounts go with it; its claims released as a cloud detaches a dead machine's
// disks, or left to lapse; sometimes its network namespace deleted too, the machine replaced by one with a new
// address and an empty disk), and a dead node's restart (it boots again on its disk). After every event, before
// and after the cluster settles: no volume mounted twice (on two nodes, at two points, through two loop devices;
// a watch of the machines' mount tables also runs all along), no image bound to two loop devices, no volume
// formatted that held data (the marker written at its first mount reads back, its filesystem UUID is
// unchanged); once it settled, every key written to etcd through the members' DNS names reads back, and a few
// more are written.
func TestProtokubeChaos(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "etcdctl", "dig", "named", "losetup", "mkfs.ext4", "blkid", "debugfs", "ip")
	c := &chaosRun{t: t, r: e2e.ChaosRand(t), keys: map[string]string{}}
	events := e2e.ChaosCount(t, chaosEventsEnv, chaosEventsBounded, chaosEventsSoak)
	begin := time.Now()
	c.setup()
	t.Logf("set up (binaries, BIND, the cluster's volumes) in %s", time.Since(begin).Round(time.Millisecond))
	for _, n := range c.nodes {
		c.machines.boot(n)
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
	e2e.WriteFile(t, specFile, e2e.WithMachines(t, e2e.WithRFC2136(t, spec, c.bind, c.nw.Gateway+":53", secretAt)))
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
		e2e.DetachLoopsOf(t, img) // runs after the machines are gone
	}
	c.machines = newEtcdMachines(t, c.bin, c.nw, state, c.pool, c.bind.KeySecret+"\n", time.Second, chaosLease)
	for i := 1; i <= 4; i++ {
		// The fourth node runs the first group's configuration: it is the spare of zone a.
		c.nodes = append(c.nodes, c.machines.node("node"+strconv.Itoa(i), "control-plane-a-"+strconv.Itoa(min(i, 3))))
	}
	c.client = c.nw.Node(t, "client")
	c.client.SetResolver(c.nw.Gateway)
	c.vols = localtasks.NewVolumes(mustPool(t, c.pool), volumetasks.Holder{NodeID: "e2e-observer"}, 0)
	c.data = newVolumeData(t, c.pool)
	watch := e2e.NeverMountedTwiceOn(t, c.machines.mounts)
	t.Cleanup(func() {
		if watch.Checks() == 0 {
			t.Error("the mount watch never looked")
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("events: %s", strings.Join(c.history, "; "))
		}
	})
}

// wake starts a round at once (SIGHUP) on every live node whose protokube did not just start: a SIGHUP before
// the Go runtime installed its handler would end the process, and a protokube that just started runs a round
// anyway.
func (c *chaosRun) wake() {
	for _, n := range c.nodes {
		if n.alive() && !n.fresh {
			n.wake()
		}
		n.fresh = false
	}
}

func (c *chaosRun) alive() (alive, dead []*etcdMachine) {
	for _, n := range c.nodes {
		if n.alive() {
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
		n.killProtokube(t)
		return "SIGKILL of " + n.id + "'s protokube, restarted by systemd"
	case "kill-etcd":
		var running []*etcdMachine
		for _, n := range alive {
			if n.etcdContainer("main") != "" {
				running = append(running, n)
			}
		}
		if len(running) == 0 { // the cluster has not settled: none runs at this moment
			n := alive[c.r.IntN(len(alive))]
			n.killProtokube(t)
			return "SIGKILL of " + n.id + "'s protokube (no etcd ran), restarted by systemd"
		}
		n := running[c.r.IntN(len(running))]
		if err := n.killEtcd(t, "main"); err != nil {
			t.Logf("%v (it stopped meanwhile)", err)
		}
		return "SIGKILL of " + n.id + "'s etcd main"
	case "die":
		n := alive[c.r.IntN(len(alive))]
		modes := []string{"released", "lapsing", "released, network gone", "lapsing, network gone"}
		mode := modes[c.r.IntN(len(modes))]
		c.die(n, strings.HasPrefix(mode, "released"), strings.HasSuffix(mode, "network gone"))
		return fmt.Sprintf("%s dies (claims %s)", n.id, mode)
	default:
		n := dead[c.r.IntN(len(dead))]
		c.machines.boot(n)
		return fmt.Sprintf("%s restarts (address %s)", n.id, n.net.IP)
	}
}

// die kills a node as a machine dies: its machine killed (protokube, kubelet, etcd; its mounts go with its mount
// namespace); with release, its volumes are detached and their claims released (what a cloud does for a dead
// instance), else their claims lapse after chaosLease; with gone, its network namespace is deleted too, and the
// machine is replaced by one with an empty disk (a new namespace and address when it restarts).
func (c *chaosRun) die(n *etcdMachine, release, gone bool) {
	t := c.t
	ctx := context.Background()
	held := holdersOf(t, c.vols)
	c.machines.die(n)
	if gone {
		if err := n.net.Remove(); err != nil {
			t.Fatal(err)
		}
		n.net = nil
		if err := os.RemoveAll(n.disk); err != nil {
			t.Fatal(err)
		}
	}
	if release {
		for _, vol := range slices.Sorted(maps.Keys(held)) {
			if held[vol] != n.id {
				continue
			}
			// The mounts of the dead machine's mount namespaces go a moment after its processes: until then the
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
}

// checkSafety checks what must hold at every moment: no volume mounted twice, no image bound to two loop
// devices (a claimant unbinds the former holder's before it binds its own), no volume formatted.
func (c *chaosRun) checkSafety(when string) {
	t := c.t
	t.Helper()
	if err := e2e.VolumesMountedTwiceOn(c.machines.mounts()); err != nil {
		t.Errorf("%s: %v", when, err)
	}
	for _, img := range c.images {
		if loops := boundLoops(t, img); len(loops) > 1 {
			t.Errorf("%s: volume %s is bound to %d loop devices: %v", when, volumeOf(img), len(loops), loops)
		}
	}
	c.data.check(t, func(img string) []string { return c.machines.hostPaths(c.nodes, img) })
	for _, n := range c.nodes {
		if n.alive() {
			if err := n.protokubeRestarted(); err != nil {
				t.Errorf("%s: %v", when, err)
			}
		}
	}
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
		if mps := c.machines.hostPaths(c.nodes, img); len(mps) == 1 {
			c.data.mounted(t, volumeOf(img), mps[0])
		}
	}
}

// settled says why the cluster has not settled yet; "" when it has.
func (c *chaosRun) settled() string {
	t := c.t
	alive, _ := c.alive()
	byID := nodesByID(alive)
	held := holdersOf(t, c.vols)
	count := map[string]int{}
	for _, img := range c.images {
		vol := volumeOf(img)
		n := byID[held[vol]]
		if n == nil {
			continue
		}
		count[etcdClusterOf(vol)]++
		if where, ok := c.machines.mountedAt(img, n, vol); !ok {
			return fmt.Sprintf("volume %s, held by %s, is mounted at %v", vol, n.id, where)
		}
		if etcdClusterOf(vol) != "etcd-main" {
			continue
		}
		if n.etcdContainer("main") == "" {
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
// a node's disk: a node's disk may be wiped later.
func (c *chaosRun) copyClientPKI() {
	c.tls = pkiFrom(c.t, c.nodes[0])
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
