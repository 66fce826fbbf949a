//go:build e2e

package protokube_test

import (
	"context"
	"fmt"
	"os"
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

// TestEtcdSurvivesLosingANode: four control-plane nodes, each a machine of its own (systemd in systemd-nspawn, in
// a network namespace), share one local pool holding three member volumes of each etcd cluster; on each,
// protokube.service publishes DNS to a real BIND by RFC 2136, and a real kubelet on containerd runs etcd in
// containers from the manifests protokube writes. The three main volumes end on three nodes, etcd is healthy
// through the DNS names and takes 1000 keys. Then one node's machine dies: the spare node claims the freed
// volume, mounts it without formatting it, the member rejoins under its own name with its data, and the 1000
// keys read back. No volume is ever mounted on two nodes.
func TestEtcdSurvivesLosingANode(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "etcdctl", "dig", "named", "losetup", "mkfs.ext4", "blkid", "ip")
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
	e2e.WriteFile(t, specFile, e2e.WithMachines(t, e2e.WithRFC2136(t, spec, bind, nw.Gateway+":53", secretAt)))
	kubeup("create", "cluster", "--name", cluster, "--cloud", "local", "--zones", "a", "--control-plane-count", "3", "--node-count", "0")
	kubeup("replace", "-f", specFile)
	kubeup("update", "cluster", cluster, "--yes")

	pool := state + "-local/volumes"
	images, err := filepath.Glob(filepath.Join(pool, "*.img"))
	if err != nil || len(images) != 6 {
		t.Fatalf("the pool holds %v (%v), want 6 volumes", images, err)
	}
	for _, img := range images {
		e2e.DetachLoopsOf(t, img) // runs after the machines are gone
	}

	f := newEtcdMachines(t, bin, nw, state, pool, bind.KeySecret+"\n", 2*time.Second, 10*time.Minute)
	var nodes []*etcdMachine
	for i := 1; i <= 4; i++ {
		// the spare runs the first group's configuration
		nodes = append(nodes, f.node("node"+strconv.Itoa(i), "control-plane-a-"+strconv.Itoa(min(i, 3))))
	}
	watch := e2e.NeverMountedTwiceOn(t, f.mounts)

	for _, n := range nodes[:3] {
		f.boot(n)
	}
	vols := localtasks.NewVolumes(mustPool(t, pool), volumetasks.Holder{NodeID: "e2e-observer"}, 0)
	holders := e2e.WaitFor(t, 5*time.Minute, "the three nodes to hold a main and an events volume each", func() (map[string]string, bool) {
		h := holdersOf(t, vols)
		return h, len(h) == 6 && distinct(h, "etcd-main") == 3 && distinct(h, "etcd-events") == 3
	})
	f.boot(nodes[3])

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
	tls := e2e.WaitFor(t, 3*time.Minute, "protokube to write etcd's client certificate on node1", func() ([]string, bool) {
		if _, err := os.Stat(filepath.Join(nodes[0].m.Dir, "srv/kubernetes/kube-apiserver/etcd-client.key")); err != nil {
			return nil, false
		}
		return pkiFrom(t, nodes[0]), true
	})
	client := nw.Node(t, "client")
	client.SetResolver(nw.Gateway)
	etcdctl := func(args ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return client.Run(cctx, "etcdctl", append(append([]string{"--endpoints=" + main, "--command-timeout=10s"}, tls...), args...)...)
	}
	e2e.WaitFor(t, 5*time.Minute, "etcd main to be healthy on its three members through their DNS names", func() (string, bool) {
		out, err := etcdctl("endpoint", "health")
		return fmt.Sprintf("%s %v", out, err), err == nil && strings.Count(out, "is healthy") == 3
	})
	// No kube-apiserver runs here: the API's name holds no node's address (a node's address goes there only
	// while its own kube-apiserver answers /readyz); kubeup made no placeholder in this BIND, and protokube makes
	// none.
	if out, err := client.Run(ctx, "dig", "+short", "@"+nw.Gateway, "api.internal."+cluster, "A"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("api.internal.%s: %q, %v; want no address: no kube-apiserver is ready", cluster, out, err)
	}
	// In transactions of 100 puts (etcd takes up to 128 operations in one): an etcdctl, with its TLS handshake,
	// for each key took minutes.
	script := fmt.Sprintf(`for b in $(seq 0 %d); do
	  { echo; for i in $(seq $((b*100+1)) $((b*100+100))); do echo "put key-$i value-$i"; done; echo; echo; } |
	    etcdctl --endpoints=%s %s txn | grep -qx SUCCESS || exit 1
	done`, keys/100-1, main, strings.Join(tls, " "))
	if out, err := client.Run(ctx, "sh", "-c", script); err != nil {
		t.Fatalf("writing %d keys: %v\n%s", keys, err, out)
	}

	// A node dies: its machine is killed (protokube, kubelet, etcd; its mounts go with it), and its volumes are
	// detached and their claims released, as a cloud does for a terminated instance.
	var victim *etcdMachine
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
	f.die(victim)
	for _, vol := range lost {
		// The mounts of the dead machine's mount namespaces go a moment after its processes: until then the
		// device is in use, and Release refuses it.
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
	e2e.WaitFor(t, 5*time.Minute, "etcd main to be healthy again, the spare serving the dead node's member", func() (string, bool) {
		out, err := etcdctl("endpoint", "health")
		return fmt.Sprintf("%s %v", out, err), err == nil && strings.Count(out, "is healthy") == 3
	})
	out, err := etcdctl("member", "list")
	if err != nil || strings.Count(out, "started") != 3 {
		t.Errorf("member list: %v\n%s", err, out)
	}
	out, err = etcdctl("get", "key-", "--prefix", "--keys-only")
	if n := len(strings.Fields(out)); err != nil || n != keys {
		t.Errorf("reading the keys back: %d keys, want %d (%v)", n, keys, err)
	}
	if out, err := etcdctl("get", "key-777", "--print-value-only"); err != nil || strings.TrimSpace(out) != "value-777" {
		t.Errorf("key-777: %q, %v", out, err)
	}

	// A converged node's dry run has nothing to do.
	dry, err := spare.exec("/usr/local/bin/protokube", "--conf="+spare.conf, "--node-id="+spare.id, "--internal-ip="+spare.net.IP, "--interval=2s", "--lease=10m", "--once", "--dryrun")
	if err != nil || !strings.Contains(dry, "No changes") {
		t.Errorf("protokube --once --dryrun on the converged spare: %v\n%s", err, dry)
	}
	if watch.Checks() == 0 {
		t.Error("the mount watch never looked")
	}
	for _, n := range nodes {
		if n.alive() {
			if err := n.protokubeRestarted(); err != nil {
				t.Error(err)
			}
		}
	}
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
