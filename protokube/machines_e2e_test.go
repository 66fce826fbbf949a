//go:build e2e

package protokube_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// etcdMachine is one control-plane node of protokube's etcd end-to-end tests: a machine of its own (systemd in
// systemd-nspawn, e2e.BootMachine) in a network namespace, where protokube.service claims and mounts the pool's
// volumes, writes etcd's manifests and publishes DNS, and a real kubelet on containerd runs etcd from those
// manifests in containers. The runtime, kubelet and the etcd image are put there as e2e.StandaloneKubelet does;
// protokube then converges containerd's and kubelet's configuration to the node's, as on every control-plane
// node, and restarts them. Only etcd's image is there: the other control-plane pods wait for theirs, and no
// kube-apiserver runs. Its disk is kept across boots until the machine is replaced.
type etcdMachine struct {
	id   string
	conf string // its node configuration in the state store (the store is bound read-only in the machine)
	disk string // what keeps its disk across boots
	gen  int    // how many network namespaces it had
	net  *e2e.NetNode
	m    *e2e.Container // nil while it is dead
	// kills is how many times the test killed its protokube since it booted: systemd restarted it as many times.
	kills int
	// fresh is set when its protokube has just started (the machine booted, or systemd restarted it after a
	// kill): too early for a SIGHUP (see chaosRun.wake).
	fresh bool
}

// etcdMachines is what the machines of one test share.
type etcdMachines struct {
	t         *testing.T
	bin       string // where kubeup and protokube were built
	nw        *e2e.Net
	state     string // the file:// state store's directory
	pool      string // the local provider's volume pool
	secret    string // the TSIG key's secret, for each node's protokube
	etcdImage string
	interval  time.Duration
	lease     time.Duration

	mu   sync.Mutex
	live map[string]e2e.NodeMounts // the mount tables of the live machines, by node: the mount watch reads them
}

// newEtcdMachines finds the etcd image and checks this host can run machines.
func newEtcdMachines(t *testing.T, bin string, nw *e2e.Net, state, pool, secret string, interval, lease time.Duration) *etcdMachines {
	t.Helper()
	e2e.RequireTools(t, "systemd-nspawn", "nsenter")
	f := &etcdMachines{t: t, bin: bin, nw: nw, state: state, pool: pool, secret: secret, interval: interval, lease: lease,
		live: map[string]e2e.NodeMounts{}}
	for _, img := range e2e.Images(t) {
		if strings.HasPrefix(img.Ref, "registry.k8s.io/etcd:") {
			f.etcdImage = img.Ref
		}
	}
	if f.etcdImage == "" {
		t.Fatal("no etcd image among the archives of `make images`")
	}
	return f
}

// node makes node id, running configuration group of the state store; it does not boot it.
func (f *etcdMachines) node(id, group string) *etcdMachine {
	return &etcdMachine{id: id, conf: filepath.Join(f.state, cluster, "nodeup", group), disk: filepath.Join(f.t.TempDir(), id+"-disk")}
}

// boot boots node n: a network namespace (a new one when it has none), the machine on its disk, containerd and
// kubelet (with the etcd image), then protokube.service. systemd restarts protokube at once when it dies.
func (f *etcdMachines) boot(n *etcdMachine) {
	t := f.t
	t.Helper()
	if n.net == nil {
		name := n.id
		if n.gen > 0 {
			name += "-" + strconv.Itoa(n.gen)
		}
		n.gen++
		n.net = f.nw.Node(t, name)
		n.net.SetResolver(f.nw.Gateway)
	}
	n.m = e2e.BootMachine(t, e2e.MachineOptions{NetNS: "/run/netns/" + n.net.Name, Binds: []string{f.pool},
		ReadOnly: []string{f.state}, Kubelet: true, Hostname: n.id, Nameserver: f.nw.Gateway,
		LoopDevices: true, Disk: n.disk})
	n.kills, n.fresh = 0, true
	f.mu.Lock()
	f.live[n.id] = e2e.MachineMounts(n.id, n.m, "/mnt")
	f.mu.Unlock()
	m := n.m
	t.Cleanup(func() { // registered after the machine's own cleanup: runs before it
		if t.Failed() && n.m == m {
			t.Logf("%s: protokube, kubelet and etcd (the last lines):\n%s", n.id, n.journal(30))
		}
	})
	e2e.WriteFile(t, filepath.Join(n.m.Dir, secretAt), f.secret)
	e2e.InstallFile(t, filepath.Join(f.bin, "protokube"), filepath.Join(n.m.Dir, "/usr/local/bin/protokube"))
	// protokube converges the node to its configuration, protokube.service included: the test's flags are a
	// drop-in, which it leaves alone.
	e2e.WriteFile(t, filepath.Join(n.m.Dir, "/etc/systemd/system/protokube.service"), `[Unit]
Description=protokube
After=kubelet.service
[Service]
ExecStart=/usr/local/bin/protokube
Restart=always
RestartSec=100ms
`)
	e2e.WriteFile(t, filepath.Join(n.m.Dir, "/etc/systemd/system/protokube.service.d/10-e2e.conf"), fmt.Sprintf(`[Service]
ExecStart=
ExecStart=/usr/local/bin/protokube --conf=%s --node-id=%s --internal-ip=%s --interval=%s --lease=%s
Restart=always
RestartSec=100ms
`, n.conf, n.id, n.net.IP, f.interval, f.lease))
	e2e.StandaloneKubelet(t, n.m, f.etcdImage)
	n.m.MustExec(t, "systemctl", "start", "protokube.service")
}

// die ends node n as a power cut would (its mounts go with its mount namespace; its loop devices stay bound)
// and removes its machine: a dead machine's disk can be read by no one until it boots again.
func (f *etcdMachines) die(n *etcdMachine) {
	f.t.Helper()
	n.m.Remove(f.t)
	f.mu.Lock()
	delete(f.live, n.id)
	f.mu.Unlock()
	n.m = nil
}

// alive reports whether the node's machine runs.
func (n *etcdMachine) alive() bool { return n.m != nil }

// exec runs a command in the node's machine.
func (n *etcdMachine) exec(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return n.m.Exec(ctx, args...)
}

// killProtokube sends SIGKILL to protokube's process group (what it runs, mkfs and losetup, with it), as a crash
// would end them; systemd restarts it. (systemctl kill --kill-whom=all fails with EIO in these machines on a
// cgroup v1 host.)
func (n *etcdMachine) killProtokube(t *testing.T) {
	t.Helper()
	// Between a kill and systemd's restart (100ms) there is no process to kill: wait for it.
	const kill = `for i in $(seq 100); do
	pid=$(systemctl show -p MainPID --value protokube.service)
	if [ "$pid" -gt 0 ]; then kill -9 "-$pid"; exit; fi
	sleep 0.1
done
echo "protokube.service has no main process"; exit 1`
	if out, err := n.exec("sh", "-c", kill); err != nil {
		t.Fatalf("%s: killing protokube: %v\n%s", n.id, err, out)
	}
	n.kills++
	n.fresh = true
}

// wake has protokube start a round at once (SIGHUP).
func (n *etcdMachine) wake() {
	n.exec("systemctl", "kill", "--signal=SIGHUP", "--kill-whom=main", "protokube.service")
}

// protokubeRestarted returns an error when systemd restarted protokube more often than the test killed it:
// protokube exited on its own.
func (n *etcdMachine) protokubeRestarted() error {
	out, err := n.exec("systemctl", "show", "-p", "NRestarts", "--value", "protokube.service")
	if err != nil {
		return fmt.Errorf("%s: protokube.service's restarts: %v\n%s", n.id, err, out)
	}
	if restarts, _ := strconv.Atoi(strings.TrimSpace(out)); restarts > n.kills {
		return fmt.Errorf("%s: protokube exited on its own: restarted %d times, killed %d times\n%s", n.id, restarts, n.kills, n.journal(40))
	}
	return nil
}

// etcdContainer returns the id of the running container of etcd cluster ec ("main") on the node, "" when none
// runs.
func (n *etcdMachine) etcdContainer(ec string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := n.m.CRI(ctx, "ps", "-q", "--state", "running", "--name", "^etcd-"+ec+"$")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// killEtcd sends SIGKILL to the running etcd of cluster ec, as its crash would; kubelet starts it again.
func (n *etcdMachine) killEtcd(t *testing.T, ec string) error {
	t.Helper()
	id := n.etcdContainer(ec)
	if id == "" {
		return fmt.Errorf("no etcd-%s runs on %s", ec, n.id)
	}
	if out, err := n.exec("/usr/local/bin/ctr", "-n", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id); err != nil {
		return fmt.Errorf("%s: killing etcd-%s (%s): %v\n%s", n.id, ec, id, err, out)
	}
	return nil
}

// journal returns the last lines of protokube's, kubelet's and etcd's logs on the node.
func (n *etcdMachine) journal(lines int) string {
	if n.m == nil {
		return "(dead)"
	}
	out, _ := n.exec("sh", "-c", fmt.Sprintf("tail -n %d /var/log/pods/*/*/*.log; journalctl --no-pager -o short-precise -n %d -u protokube -u kubelet", lines, lines))
	return out
}

// mounts is where a mount check finds the live nodes' volumes, in order of node: a mount watch calls it from a
// goroutine of its own.
func (f *etcdMachines) mounts() []e2e.NodeMounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Collect(maps.Values(f.live))
	slices.SortFunc(out, func(a, b e2e.NodeMounts) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// pkiFrom copies etcd's client certificate and key (kube-apiserver's, which protokube writes on every node) out
// of a node's disk into a directory of the test, and returns etcdctl's TLS flags for them.
func pkiFrom(t *testing.T, n *etcdMachine) []string {
	t.Helper()
	dir := t.TempDir()
	pki := filepath.Join(n.m.Dir, "srv/kubernetes/kube-apiserver")
	for _, f := range []string{"etcd-ca.crt", "etcd-client.crt", "etcd-client.key"} {
		b, err := os.ReadFile(filepath.Join(pki, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"--cacert=" + dir + "/etcd-ca.crt", "--cert=" + dir + "/etcd-client.crt", "--key=" + dir + "/etcd-client.key"}
}

// nodesByID maps each node of nodes by its id.
func nodesByID(nodes []*etcdMachine) map[string]*etcdMachine {
	m := map[string]*etcdMachine{}
	for _, n := range nodes {
		m[n.id] = n
	}
	return m
}

// mountedAt says whether the volume image img is mounted exactly once, at the holder's mount point for vol.
func (f *etcdMachines) mountedAt(img string, holder *etcdMachine, vol string) (where []e2e.MachineMount, ok bool) {
	where = e2e.MountsOfFileOn(f.mounts(), img)
	return where, slices.Equal(where, []e2e.MachineMount{{Node: holder.id, At: "/mnt/master-" + vol}})
}

// hostPaths returns where this process reaches the mounts of the volume image img on the live nodes: through
// each machine's /proc/PID/root.
func (f *etcdMachines) hostPaths(nodes []*etcdMachine, img string) []string {
	byID := nodesByID(nodes)
	var out []string
	for _, m := range e2e.MountsOfFileOn(f.mounts(), img) {
		if n := byID[m.Node]; n != nil && n.m != nil {
			out = append(out, n.m.Root()+m.At)
		}
	}
	return out
}
