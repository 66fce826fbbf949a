//go:build e2e

package protokube_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

const (
	cluster   = "demo.example.com"
	dnsZone   = "example.com"
	secretAt  = "/etc/kubeup/tsig.secret" // on each node
	manifests = "/etc/kubernetes/manifests"
	keys      = 1000
)

// node is one control-plane node of the test: a network namespace, a filesystem root, its protokube and the
// stand-in for its kubelet.
type node struct {
	id      string
	net     *e2e.NetNode
	root    string
	conf    string
	proc    *e2e.Process
	log     string
	kubelet *e2e.FakeKubelet
}

// TestEtcdSurvivesLosingANode: four control-plane nodes (network namespaces) share one local pool holding three
// member volumes of each etcd cluster; each runs protokube, which publishes DNS to a real BIND by RFC 2136, and a
// stand-in for kubelet runs Debian's etcd from the manifests protokube writes. The three main volumes end on three
// nodes, etcd is healthy through the DNS names and takes 1000 keys. Then one node dies: the spare node claims the
// freed volume, mounts it without formatting it, the member rejoins under its own name with its data, and the 1000
// keys read back. No volume is ever mounted on two nodes.
func TestEtcdSurvivesLosingANode(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "etcd", "etcdctl", "dig", "named", "losetup", "mkfs.ext4", "blkid", "ip", "unshare")
	ctx := context.Background()
	bin := e2e.BuildBinaries(t, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/protokube")
	nw := e2e.Network(t)
	bind := e2e.StartBINDOn(t, dnsZone, nw.Gateway, 53)

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	kubeup := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "kubeup"), append(args, "--state", "file://"+state)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	spec := kubeup("create", "cluster", "--name", cluster, "--cloud", "local", "--zones", "a", "--control-plane-count", "3", "--node-count", "0", "--dry-run", "-o", "yaml")
	specFile := filepath.Join(dir, "spec.yaml")
	e2e.WriteFile(t, specFile, e2e.WithRFC2136(t, spec, bind, nw.Gateway+":53", secretAt))
	kubeup("create", "cluster", "--name", cluster, "--cloud", "local", "--zones", "a", "--control-plane-count", "3", "--node-count", "0")
	kubeup("replace", "-f", specFile)
	kubeup("update", "cluster", cluster, "--yes")

	pool := state + "-local/volumes"
	images, err := filepath.Glob(filepath.Join(pool, "*.img"))
	if err != nil || len(images) != 6 {
		t.Fatalf("the pool holds %v (%v), want 6 volumes", images, err)
	}
	for _, img := range images {
		e2e.DetachLoopsOf(t, img) // runs after the unmounts registered below
	}

	var nodes []*node
	var roots []string
	for i := 1; i <= 4; i++ {
		n := &node{id: "node" + strconv.Itoa(i), root: filepath.Join(dir, "node"+strconv.Itoa(i))}
		n.net = nw.Node(t, n.id)
		n.net.SetResolver(nw.Gateway)
		group := "control-plane-a-" + strconv.Itoa(min(i, 3)) // the spare runs the first group's configuration
		n.conf = filepath.Join(state, cluster, "nodeup", group)
		e2e.WriteFile(t, filepath.Join(n.root, secretAt), bind.KeySecret+"\n")
		for _, img := range images {
			e2e.Unmount(t, filepath.Join(n.root, "mnt", "master-"+strings.TrimSuffix(filepath.Base(img), ".img")))
		}
		nodes = append(nodes, n)
		roots = append(roots, n.root)
	}
	watch := e2e.NeverMountedTwice(t, roots...)
	t.Cleanup(func() { // registered after the processes' own cleanups would hide their logs: runs before them
		if !t.Failed() {
			return
		}
		for _, n := range nodes {
			if n.proc != nil {
				t.Logf("%s protokube log:\n%s", n.id, e2e.Tail(n.log, 40))
			}
			out, _ := exec.Command("find", filepath.Join(n.root, "mnt"), "-maxdepth", "4").CombinedOutput()
			t.Logf("%s: %s", n.id, out)
			if n.kubelet != nil {
				for _, p := range n.kubelet.Pods() {
					if strings.HasPrefix(p.Manifest, "etcd") {
						t.Logf("%s %s (pid %d, %d starts, %s):\n%s", n.id, p.Manifest, p.PID, p.Starts, p.LastError, e2e.Tail(p.Log, 25))
					}
				}
			}
		}
	})

	for _, n := range nodes[:3] {
		n.kubelet = e2e.RunStaticPods(t, n.net, n.root, manifests)
		n.start(t, bin)
	}
	vols := localtasks.NewVolumes(mustPool(t, pool), volumetasks.Holder{NodeID: "e2e-observer"}, 0)
	holders := e2e.WaitFor(t, 3*time.Minute, "the three nodes to hold a main and an events volume each", func() (map[string]string, bool) {
		h := holdersOf(t, vols)
		return h, len(h) == 6 && distinct(h, "etcd-main") == 3 && distinct(h, "etcd-events") == 3
	})
	nodes[3].kubelet = e2e.RunStaticPods(t, nodes[3].net, nodes[3].root, manifests)
	nodes[3].start(t, bin)

	endpoints := func(port int) string {
		var eps []string
		for _, m := range []string{"a-1", "a-2", "a-3"} {
			eps = append(eps, fmt.Sprintf("https://%s.etcd-main.internal.%s:%d", m, cluster, port))
		}
		return strings.Join(eps, ",")
	}
	main := endpoints(4001)
	// etcd takes clients with a certificate of its clients CA only: kube-apiserver's, which protokube wrote on
	// every node as it converged it.
	pki := filepath.Join(nodes[0].root, "srv/kubernetes/kube-apiserver")
	tls := []string{"--cacert=" + pki + "/etcd-ca.crt", "--cert=" + pki + "/etcd-client.crt", "--key=" + pki + "/etcd-client.key"}
	etcdctl := func(n *node, args ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return n.net.Run(cctx, "etcdctl", append(append([]string{"--endpoints=" + main, "--command-timeout=10s"}, tls...), args...)...)
	}
	e2e.WaitFor(t, 3*time.Minute, "etcd main to be healthy on its three members through their DNS names", func() (string, bool) {
		out, err := etcdctl(nodes[0], "endpoint", "health")
		return fmt.Sprintf("%s %v", out, err), err == nil && strings.Count(out, "is healthy") == 3
	})
	// No kube-apiserver runs here: the API's name holds no node's address (a node's address goes there only
	// while its own kube-apiserver answers /readyz); kubeup made no placeholder in this BIND, and protokube makes
	// none.
	if out, err := nodes[0].net.Run(ctx, "dig", "+short", "@"+nw.Gateway, "api.internal."+cluster, "A"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("api.internal.%s: %q, %v; want no address: no kube-apiserver is ready", cluster, out, err)
	}
	script := fmt.Sprintf(`for i in $(seq 1 %d); do etcdctl --endpoints=%s %s put key-$i value-$i >/dev/null || exit 1; done`, keys, main, strings.Join(tls, " "))
	if out, err := nodes[0].net.Run(ctx, "sh", "-c", script); err != nil {
		t.Fatalf("writing %d keys: %v\n%s", keys, err, out)
	}

	// A node dies: its protokube and etcd are killed, its mounts go with the machine, and its volumes are
	// detached and their claims released, as a cloud does for a terminated instance.
	var victim *node
	var lost []string
	for _, n := range nodes[:3] {
		if holders[mainVolume(holders, n.id)] == n.id && n.id != "node1" {
			victim = n
			break
		}
	}
	for vol, holder := range holders {
		if holder == victim.id {
			lost = append(lost, vol)
		}
	}
	slices.Sort(lost)
	uuids := map[string]string{}
	for _, vol := range lost {
		uuids[vol] = filesystemUUID(t, pool, vol)
	}
	victim.proc.Kill()
	victim.kubelet.Stop()
	for _, vol := range lost {
		mp := filepath.Join(victim.root, "mnt", "master-"+vol)
		if out, err := exec.Command("umount", mp).CombinedOutput(); err != nil {
			t.Fatalf("unmounting %s of the dead node: %v\n%s", mp, err, out)
		}
		// The mounts of the dead etcd's mount namespace go a moment after its process: until then the device
		// is in use, and Release refuses it.
		e2e.WaitFor(t, 30*time.Second, "the release of the dead node's claim of "+vol, func() (error, bool) {
			err := vols.Release(ctx, vol)
			return err, err == nil
		})
	}

	spare := nodes[3]
	e2e.WaitFor(t, 3*time.Minute, "the spare node to hold the dead node's volumes", func() (map[string]string, bool) {
		h := holdersOf(t, vols)
		for _, vol := range lost {
			if h[vol] != spare.id {
				return h, false
			}
		}
		return h, true
	})
	for _, vol := range lost {
		if got := filesystemUUID(t, pool, vol); got != uuids[vol] {
			t.Errorf("volume %s: filesystem UUID %s, was %s: it was formatted", vol, got, uuids[vol])
		}
	}
	e2e.WaitFor(t, 3*time.Minute, "etcd main to be healthy again, the spare serving the dead node's member", func() (string, bool) {
		out, err := etcdctl(nodes[0], "endpoint", "health")
		return fmt.Sprintf("%s %v", out, err), err == nil && strings.Count(out, "is healthy") == 3
	})
	out, err := etcdctl(spare, "member", "list")
	if err != nil || strings.Count(out, "started") != 3 {
		t.Errorf("member list: %v\n%s", err, out)
	}
	out, err = etcdctl(spare, "get", "key-", "--prefix", "--keys-only")
	if n := len(strings.Fields(out)); err != nil || n != keys {
		t.Errorf("reading the keys back: %d keys, want %d (%v)", n, keys, err)
	}
	if out, err := etcdctl(spare, "get", "key-777", "--print-value-only"); err != nil || strings.TrimSpace(out) != "value-777" {
		t.Errorf("key-777: %q, %v", out, err)
	}

	// A converged node's dry run has nothing to do.
	dry := exec.Command(filepath.Join(bin, "protokube"), spare.args(true)...)
	if out, err := dry.CombinedOutput(); err != nil || !strings.Contains(string(out), "No changes") {
		t.Errorf("protokube --once --dryrun on the converged spare: %v\n%s", err, out)
	}
	if watch.Checks() == 0 {
		t.Error("the mount watch never looked")
	}
}

func (n *node) args(dryRun bool) []string {
	args := []string{"--conf=" + n.conf, "--root=" + n.root, "--node-id=" + n.id, "--internal-ip=" + n.net.IP, "--interval=2s", "--lease=10m"}
	if dryRun {
		args = append(args, "--once", "--dryrun")
	}
	return args
}

func (n *node) start(t *testing.T, bin string) {
	t.Helper()
	// protokube runs in the host's mount namespace (the node's mounts are under its root) and reaches BIND on
	// the bridge; its node's address is a flag.
	cmd := exec.Command(filepath.Join(bin, "protokube"), n.args(false)...)
	n.log = filepath.Join(t.TempDir(), n.id+"-protokube.log")
	n.proc = n.net.Start(t, cmd, n.log)
}

func mustPool(t *testing.T, dir string) *localtasks.Pool {
	t.Helper()
	p, err := localtasks.NewPool(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// holdersOf maps each claimed volume to the node that holds it.
func holdersOf(t *testing.T, vols *localtasks.Volumes) map[string]string {
	t.Helper()
	list, err := vols.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	for _, v := range list {
		if v.Holder != nil {
			h[v.ID] = v.Holder.NodeID
		}
	}
	return h
}

// distinct counts the nodes that hold the volumes whose ID contains what.
func distinct(h map[string]string, what string) int {
	seen := map[string]bool{}
	for vol, n := range h {
		if strings.Contains(vol, what) {
			seen[n] = true
		}
	}
	return len(seen)
}

// mainVolume is the main volume node holds.
func mainVolume(h map[string]string, node string) string {
	for vol, n := range h {
		if n == node && strings.Contains(vol, "etcd-main") {
			return vol
		}
	}
	return ""
}

// filesystemUUID reads the UUID of the filesystem on a volume's image in the pool.
func filesystemUUID(t *testing.T, pool, vol string) string {
	t.Helper()
	out, err := exec.Command("blkid", "-p", "-s", "UUID", "-o", "value", filepath.Join(pool, vol+".img")).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("blkid of volume %s: %v %q", vol, err, out)
	}
	return strings.TrimSpace(string(out))
}
