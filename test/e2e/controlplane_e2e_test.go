//go:build e2e

// Package e2e_test holds the end-to-end tests that run a whole cluster: kubeup, protokube and the real
// Kubernetes components together.
package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

const (
	cluster   = "cp.example.com"
	dnsZone   = "example.com"
	secretAt  = "/etc/kubeup/tsig.secret" // on each node
	manifests = "/etc/kubernetes/manifests"
)

// node is one control-plane node: a machine of its own (systemd in systemd-nspawn) in a network namespace, where
// nodeup's units run: protokube, containerd and kubelet.
type node struct {
	id   string
	net  *e2e.NetNode
	m    *e2e.Container
	conf string
	dead bool // killed by kubectlNodeDead
}

// journal returns the logs of the machine's pods, then its journal of protokube, containerd and kubelet.
func (n *node) journal(t *testing.T) string {
	t.Helper()
	if n.dead {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := n.m.Exec(ctx, "sh", "-c", "cat /var/log/pods/*/*/*.log; journalctl --no-pager -o short-precise -u protokube -u containerd -u kubelet")
	if err != nil {
		t.Logf("%s's journal: %v", n.id, err)
	}
	return out
}

// TestControlPlane starts one cluster (startControlPlane, which takes most of the test's time) and runs, in this
// order, each later step taking more of node2 and node3 away:
//
//   - kubectl_answers: kubeup makes the cluster's keystore and writes the node configurations; on three
//     control-plane machines (systemd in systemd-nspawn, each in its network namespace) nodeup converges the node,
//     protokube.service claims the etcd volumes, writes the certificates and keys their role needs and etcd's
//     manifests (TLS between peers and to clients) and publishes DNS to a real BIND, and the real kubelet runs etcd
//     and the real kube-apiserver, kube-controller-manager and kube-scheduler in containers from the manifests and
//     files kubeup wrote. With the kubeconfig of `kubeup export kubeconfig`, kubectl reaches the API through
//     api.<cluster>: ready, namespaces and ConfigMaps are created, the controller-manager and the scheduler hold
//     their leases, a new ServiceAccount's token is accepted and a forged one is not.
//   - nodes_and_pods: 3 Nodes Ready, registered by their kubelets on containerd; every mirror pod Running; a
//     Deployment of the e2e workload runs a pod per node, on the pod network, and kubectl logs and exec reach one.
//   - pods_talk: the addons applied by `kubeup update cluster`; a pod on node1 reaches a Service whose pods run on
//     node2 and node3 by its DNS name (podnetwork_e2e_test.go).
//   - addons_change: CoreDNS's version changed in the spec is one field's change in the dry run, applied, then no
//     change; disabled, its objects are deleted and the plan says so; enabled again, it is back.
//   - validate_healthy, validate_node2_kubelet_stopped, validate_node2_containerd_stopped and
//     validate_node3_etcd_stopped: `kubeup validate cluster` (validate_e2e_test.go).
//   - kubectl_node3_dead: node3's machine dies; kubectl still works through the name and the ConfigMap reads back.
//   - no_private_key_printed: no private key appears in anything kubeup, nodeup, protokube or a component printed.
func TestControlPlane(t *testing.T) {
	cp := startControlPlane(t, model.PodNetworkKubenet)
	t.Run("kubectl_answers", func(t *testing.T) { kubectlAnswers(t, cp) })
	t.Run("kubelet_credentials_objects", func(t *testing.T) { kubeletCredentialObjects(t, cp) })
	t.Run("nodes_and_pods", func(t *testing.T) { nodesAndPods(t, cp) })
	t.Run("pods_talk", func(t *testing.T) { podsTalk(t, cp) })
	t.Run("addons_change", func(t *testing.T) { addonsChange(t, cp) })
	t.Run("validate_healthy", func(t *testing.T) { validateHealthy(t, cp) })
	t.Run("validate_node2_kubelet_stopped", func(t *testing.T) { validateServiceStopped(t, cp, "kubelet.service") })
	t.Run("validate_node2_containerd_stopped", func(t *testing.T) { validateServiceStopped(t, cp, "containerd.service") })
	t.Run("validate_node3_etcd_stopped", func(t *testing.T) { validateEtcdStopped(t, cp) })
	t.Run("kubectl_node3_dead", func(t *testing.T) { kubectlNodeDead(t, cp) })
	t.Run("no_private_key_printed", func(t *testing.T) { noPrivateKeyPrinted(t, cp) })
}

// kubectlAnswers: namespaces, a ConfigMap (read back by kubectlNodeDead), the leader leases, and a
// ServiceAccount's token, signed with the service-account key kubeup made, accepted, a forged one not.
func kubectlAnswers(t *testing.T, cp *controlPlane) {
	kubectl := cp.kubectl
	cp.mustKubectlT(t, "create", "namespace", "kubeup-e2e")
	cp.mustKubectlT(t, "create", "configmap", "survivor", "-n", "kubeup-e2e", "--from-literal=answer=42")
	t.Logf("namespaces:\n%s", cp.mustKubectlT(t, "get", "namespaces"))
	holder := e2e.WaitFor(t, 3*time.Minute, "kube-controller-manager to hold its leader lease", func() (string, bool) {
		out, err := kubectl("get", "lease", "-n", "kube-system", "kube-controller-manager", "-o", "jsonpath={.spec.holderIdentity}")
		return fmt.Sprintf("%s %v", out, err), err == nil && strings.TrimSpace(out) != ""
	})
	t.Logf("kube-controller-manager's lease is held by %s", holder)
	e2e.WaitFor(t, 3*time.Minute, "kube-scheduler to hold its leader lease", func() (string, bool) {
		out, err := kubectl("get", "lease", "-n", "kube-system", "kube-scheduler", "-o", "jsonpath={.spec.holderIdentity}")
		return fmt.Sprintf("%s %v", out, err), err == nil && strings.TrimSpace(out) != ""
	})

	cp.mustKubectlT(t, "create", "serviceaccount", "robot", "-n", "kubeup-e2e")
	reqFile := filepath.Join(cp.dir, "tokenrequest.json")
	e2e.WriteFile(t, reqFile, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600}}`)
	out := cp.mustKubectlT(t, "create", "--raw", "/api/v1/namespaces/kubeup-e2e/serviceaccounts/robot/token", "-f", reqFile)
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &tr); err != nil || tr.Status.Token == "" {
		t.Fatalf("TokenRequest: %v\n%s", err, out)
	}
	caFile := filepath.Join(cp.dir, "ca.crt")
	e2e.WriteFile(t, caFile, readKeypair(t, cp.state, "kubernetes-ca").CertPEM)
	asToken := func(token string) (string, error) {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := cp.client.Command(cctx, cp.kubectlBin, "--kubeconfig=/dev/null", "--server=https://api."+cluster,
			"--certificate-authority="+caFile, "--token="+token, "--request-timeout=20s", "get", "--raw", "/api")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := asToken(tr.Status.Token); err != nil || !strings.Contains(out, `"versions"`) {
		t.Errorf("the ServiceAccount's token was not accepted: %v\n%s", err, out)
	}
	forged := tr.Status.Token[:strings.LastIndex(tr.Status.Token, ".")+1] + "AAAA"
	if out, err := asToken(forged); err == nil || !strings.Contains(out, "Unauthorized") {
		t.Errorf("a token with a forged signature was accepted (or refused for another reason): %v\n%s", err, out)
	}
}

// kubeletCredentialObjects: protokube, once its kube-apiserver is ready, applied the objects of kubelets' TLS
// bootstrap (docs/pki.md): the bootstrap token's Secret (named by the keystore's token id) and the RBAC objects.
func kubeletCredentialObjects(t *testing.T, cp *controlPlane) {
	b, err := os.ReadFile(filepath.Join(cp.state, cluster, "pki", "bootstrap-token"))
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(b)), ".")
	for _, obj := range [][]string{
		{"secret", "-n", "kube-system", "bootstrap-token-" + id},
		{"clusterrolebinding", "kubeup:kubelet-bootstrap"},
		{"clusterrolebinding", "kubeup:kubelet-renewal"},
		{"clusterrole", "kubeup:csr-approver"},
		{"clusterrolebinding", "kubeup:csr-approver"},
		{"clusterrole", "kubeup:node-routes"}, // the workers' pod routes (a local cluster)
		{"clusterrolebinding", "kubeup:node-routes"},
	} {
		e2e.WaitFor(t, 3*time.Minute, "protokube to apply "+strings.Join(obj, " "), func() (string, bool) {
			out, err := cp.kubectl(append([]string{"get", "-o", "name"}, obj...)...)
			return fmt.Sprintf("%s %v", out, err), err == nil
		})
	}
}

// kubectlNodeDead: node3 dies, its protokube (already killed by validateEtcdStopped), etcd members and components
// gone; the API still answers through api.<cluster> and kubectlAnswers' ConfigMap reads back.
func kubectlNodeDead(t *testing.T, cp *controlPlane) {
	victim := cp.nodes[2]
	cp.printed.WriteString(victim.journal(t)) // for noPrivateKeyPrinted
	victim.m.Kill(t)
	victim.dead = true
	e2e.WaitFor(t, 2*time.Minute, "the ConfigMap to read back through api."+cluster+" with a node dead", func() (string, bool) {
		out, err := cp.kubectl("get", "configmap", "survivor", "-n", "kubeup-e2e", "-o", "jsonpath={.data.answer}")
		return fmt.Sprintf("%s %v", out, err), err == nil && strings.TrimSpace(out) == "42"
	})
	cp.mustKubectlT(t, "get", "--raw", "/readyz")
	cp.mustKubectlT(t, "create", "configmap", "after-the-loss", "-n", "kubeup-e2e", "--from-literal=ok=yes")
}

// noPrivateKeyPrinted is the sentinel: no private key of the keystore, as PEM or as the base64 a kubeconfig holds,
// in anything kubeup (validate too), nodeup, protokube or a component printed.
func noPrivateKeyPrinted(t *testing.T, cp *controlPlane) {
	var logs strings.Builder
	logs.WriteString(cp.printed.String())
	for _, n := range cp.nodes {
		logs.WriteString(n.journal(t))
	}
	keys := keystoreKeys(t, cp.state)
	t.Logf("sentinel: %d private keys searched for in %d bytes of output and logs", len(keys), logs.Len())
	if len(keys) < 15 {
		t.Fatalf("found %d keys in the keystore, want every keypair's", len(keys))
	}
	for name, needles := range keys {
		for _, needle := range needles {
			if strings.Contains(logs.String(), needle) {
				t.Errorf("the private key of %s appears in what kubeup, nodeup, protokube or a component printed", name)
			}
		}
	}
}

// keystoreKeys returns, for each keypair of the cluster's keystore, strings that only its private key holds: a
// line of the PEM's body, and a piece of the PEM's base64 (as a kubeconfig carries it).
func keystoreKeys(t *testing.T, state string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(state, cluster, "pki", "*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			if tok, err := pkitasks.DecodeToken(b); err == nil {
				_, secret, _ := tok.TokenParts()
				out[filepath.Base(f)] = []string{secret.Reveal()} // the bootstrap token's secret
				continue
			}
		}
		is := readKeypair(t, state, filepath.Base(f))
		keyPEM := is.KeyPEM.Reveal()
		b, _ := pem.Decode([]byte(keyPEM))
		if b == nil {
			t.Fatalf("%s: no key", f)
		}
		body := base64.StdEncoding.EncodeToString(b.Bytes)
		b64 := base64.StdEncoding.EncodeToString([]byte(keyPEM))
		out[filepath.Base(f)] = []string{body[20:60], b64[60:100]}
	}
	return out
}

func readKeypair(t *testing.T, state, name string) *pkitasks.Issued {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, cluster, "pki", name))
	if err != nil {
		t.Fatal(err)
	}
	is, err := pkitasks.Decode(b)
	if err != nil {
		t.Fatalf("keypair %s: %v", name, err)
	}
	return is
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// controlPlane is the cluster of startControlPlane: three control-plane nodes serving the API through
// api.<cluster>, and what the tests reach it with.
type controlPlane struct {
	dir, state, bin, kubeconfig, kubectlBin string
	podNetwork                              string // spec.networking.podNetwork
	nodes                                   []*node
	client                                  *e2e.NetNode     // a network namespace on the bridge, resolving through BIND
	printed                                 *strings.Builder // everything kubeup and nodeup printed, for the sentinel check
	kubeup                                  func(args ...string) string
	kubectl                                 func(args ...string) (string, error)
	mustKubectl                             func(args ...string) string
}

// mustKubectlT is mustKubectl failing t, a subtest of the test that started the control plane (FailNow must be
// called by the test's own goroutine).
func (cp *controlPlane) mustKubectlT(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cp.kubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// startControlPlane makes the cluster of TestControlPlane, up to the API answering /readyz through
// api.<cluster>: kubeup makes the keystore and node configurations, nodeup converges a scratch root, and on three
// machines (systemd in systemd-nspawn, each in a network namespace) nodeup converges the node, protokube.service
// claims and mounts its volumes and writes etcd's manifests, and kubelet runs etcd and the real control plane in
// containers. Everything it starts stops in t.Cleanup. The cluster's pod network is podNetwork.
func startControlPlane(t *testing.T, podNetwork string) *controlPlane {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "etcd", "etcdctl", "dig", "named", "losetup", "ip", "systemd-nspawn")
	kubectlBin := e2e.Kubectl(t)
	ctx := context.Background()
	start := time.Now()
	// step logs how long the set-up has taken so far: where a slow run spent its time.
	step := func(what string) { t.Logf("set-up: %s at %s", what, time.Since(start).Round(time.Second)) }
	bin := e2e.BuildBinaries(t, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/nodeup", "kubeup.dev/kubeup/cmd/protokube")
	nw := e2e.Network(t)
	bind := e2e.StartBINDOn(t, dnsZone, nw.Gateway, 53)

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	printed := &strings.Builder{} // everything kubeup and nodeup printed, for the sentinel check
	kubeup := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "kubeup"), append(args, "--state", "file://"+state)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "kubeconfig"))
		out, err := cmd.CombinedOutput()
		printed.Write(out)
		if err != nil {
			t.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	spec := kubeup("create", "cluster", "--name", cluster, "--cloud", "local", "--zones", "a", "--control-plane-count", "3", "--node-count", "0", "--dry-run", "-o", "yaml")
	specFile := filepath.Join(dir, "spec.yaml")
	// The Cluster is the first document: its spec gets the pod network.
	spec = strings.Replace(spec, "\nspec:\n", "\nspec:\n  networking:\n    podNetwork: "+podNetwork+"\n", 1)
	e2e.WriteFile(t, specFile, e2e.WithMachines(t, e2e.WithRFC2136(t, spec, bind, nw.Gateway+":53", secretAt)))
	kubeup("create", "cluster", "--name", cluster, "--cloud", "local", "--zones", "a", "--control-plane-count", "3", "--node-count", "0")
	kubeup("replace", "-f", specFile)
	// What the nodes install, from this machine's builds, mirrored into the state store with their sha256.
	kubeup("assets", "mirror", cluster, "--from", e2e.AssetsDir(t, filepath.Join(bin, "protokube")), "--yes")
	kubeup("update", "cluster", cluster, "-o", "json")
	kubeup("update", "cluster", cluster, "--yes")
	if out := kubeup("update", "cluster", cluster); !strings.Contains(out, "No changes") {
		t.Errorf("a second update after the apply reports changes:\n%s", out)
	}
	kubeup("update", "cluster", cluster, "-o", "json")
	kubeup("get", "cluster", cluster, "--full", "-o", "yaml")
	step("binaries built, BIND started, the cluster applied")

	pool := state + "-local/volumes"
	images, err := filepath.Glob(filepath.Join(pool, "*.img"))
	if err != nil || len(images) != 6 {
		t.Fatalf("the pool holds %v (%v), want 6 volumes", images, err)
	}
	for _, img := range images {
		e2e.DetachLoopsOf(t, img) // runs after the unmounts registered below
	}

	// nodeup converges a scratch root from a control-plane configuration: its output is checked too.
	nodeupOut, err := exec.Command(filepath.Join(bin, "nodeup"), "--conf="+filepath.Join(state, cluster, "nodeup", "control-plane-a-1"),
		"--root="+filepath.Join(dir, "scratch")).CombinedOutput()
	printed.Write(nodeupOut)
	if err != nil {
		t.Fatalf("nodeup on a scratch root: %v\n%s", err, nodeupOut)
	}
	if mode := fileMode(t, filepath.Join(dir, "scratch/srv/kubernetes/server.key")); mode != 0o600 {
		t.Errorf("nodeup wrote kube-apiserver's key with mode %o, want 600", mode)
	}

	kubeup("export", "kubeconfig", cluster)
	var nodes []*node
	for i := 1; i <= 3; i++ {
		n := &node{id: "node" + strconv.Itoa(i), conf: filepath.Join(state, cluster, "nodeup", "control-plane-a-"+strconv.Itoa(i))}
		n.net = nw.Node(t, n.id)
		n.net.SetResolver(nw.Gateway)
		n.m = e2e.BootMachine(t, e2e.MachineOptions{NetNS: "/run/netns/" + n.net.Name, Binds: []string{pool}, Kubelet: true,
			Hostname: n.id, Nameserver: nw.Gateway, LoopDevices: true})
		nodes = append(nodes, n)
	}
	step("three machines booted")
	client := nw.Node(t, "client")
	client.SetResolver(nw.Gateway)
	t.Cleanup(func() { // registered after the machines' own cleanups: runs before them
		if !t.Failed() {
			return
		}
		for _, n := range nodes {
			t.Logf("%s: protokube, containerd and kubelet (the last lines):\n%s", n.id, lastLines(n.journal(t), 60))
		}
	})
	for _, n := range nodes {
		e2e.WriteFile(t, filepath.Join(n.m.Root(), secretAt), bind.KeySecret+"\n")
		// The test's own setting: protokube's rounds every 2s with a 10-minute lease.
		e2e.WriteFile(t, filepath.Join(n.m.Root(), "/etc/systemd/system/protokube.service.d/10-e2e.conf"),
			"[Service]\nExecStart=\nExecStart=/usr/local/bin/protokube --conf=/etc/kubeup/node.conf --interval=2s --lease=10m\n")
		out, err := exec.Command(filepath.Join(bin, "nodeup"), "--conf="+n.conf, "--root="+n.m.Root(), "--node-id="+n.id).CombinedOutput()
		printed.Write(out)
		if err != nil {
			t.Fatalf("nodeup on %s: %v\n%s", n.id, err, out)
		}
	}

	step("nodeup converged the three machines")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	// kubectl runs kubectl on the client. A TLS handshake that times out (client-go gives it 10 s) is tried again,
	// twice at most, with the machine's load logged: on a loaded 2-core machine running the whole suite, three
	// kube-apiservers, six etcd members and the race-built tests share the cores, and a handshake can wait for
	// a starved kube-apiserver (CI saw it once). Any other error, and a third timeout, is the answer.
	kubectl := func(args ...string) (string, error) {
		for attempt := 1; ; attempt++ {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			cmd := client.Command(cctx, kubectlBin, append([]string{"--kubeconfig=" + kubeconfig, "--request-timeout=20s"}, args...)...)
			out, err := cmd.CombinedOutput()
			cancel()
			if err == nil || attempt == 3 || !strings.Contains(string(out), "TLS handshake timeout") {
				return string(out), err
			}
			load, _ := os.ReadFile("/proc/loadavg")
			t.Logf("kubectl %s: TLS handshake timeout (attempt %d of 3, load average %s): trying again", strings.Join(args, " "), attempt, strings.TrimSpace(string(load)))
		}
	}
	mustKubectl := func(args ...string) string {
		t.Helper()
		out, err := kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	e2e.WaitFor(t, 5*time.Minute, "the API to be ready through api."+cluster, func() (string, bool) {
		out, err := kubectl("get", "--raw", "/readyz")
		return fmt.Sprintf("%s %v", out, err), err == nil && strings.TrimSpace(out) == "ok"
	})
	step("the API ready")
	// Each node's protokube adds its address once its own kube-apiserver is ready: the first one answers before
	// the others are.
	e2e.WaitFor(t, 2*time.Minute, "api."+cluster+" to hold the three nodes' addresses", func() (string, bool) {
		out, err := client.Run(ctx, "dig", "+short", "api."+cluster, "A")
		return fmt.Sprintf("%q %v", out, err), err == nil && len(strings.Fields(out)) == 3
	})
	step("api." + cluster + " holding the three addresses")
	return &controlPlane{podNetwork: podNetwork, dir: dir, state: state, bin: bin, kubeconfig: kubeconfig, kubectlBin: kubectlBin, nodes: nodes, client: client,
		printed: printed, kubeup: kubeup, kubectl: kubectl, mustKubectl: mustKubectl}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// nodesAndPods: each node registered by its own kubelet, Ready, on containerd; every static pod's mirror pod
// Running; then a Deployment of 3 replicas of the e2e workload (on the pod network, the control plane's taint
// tolerated) runs one pod per node, and kubectl logs and exec reach one of them through kube-apiserver and its
// node's kubelet.
func nodesAndPods(t *testing.T, cp *controlPlane) {
	out := e2e.WaitFor(t, 3*time.Minute, "3 Nodes Ready", func() (string, bool) {
		out, err := cp.kubectl("get", "nodes", "-o", "wide", "--no-headers")
		ready := 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[1] == "Ready" {
				ready++
			}
		}
		return out, err == nil && ready == 3
	})
	t.Logf("kubectl get nodes -o wide:\n%s", out)
	for _, n := range cp.nodes {
		if !strings.Contains(out, n.id+" ") {
			t.Errorf("no Node %s", n.id)
		}
	}
	if strings.Count(out, "containerd://") != 3 || strings.Count(out, " v"+e2e.KubernetesVersion+" ") != 3 {
		t.Errorf("want 3 kubelets of %s on containerd:\n%s", e2e.KubernetesVersion, out)
	}
	pods := e2e.WaitFor(t, 3*time.Minute, "every static pod's mirror pod Running", func() (string, bool) {
		out, err := cp.kubectl("get", "pods", "-n", "kube-system", "--no-headers", "-o", "custom-columns=NAME:.metadata.name,PHASE:.status.phase")
		phase := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				phase[f[0]] = f[1]
			}
		}
		running := 0
		for _, c := range []string{"etcd-main", "etcd-events", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
			for _, n := range cp.nodes {
				if phase[c+"-"+n.id] == "Running" {
					running++
				}
			}
		}
		return out, err == nil && running == 18
	})
	t.Logf("kube-system's pods:\n%s", pods)

	deployment, err := filepath.Abs("../../hack/hello-deployment.yaml") // the demo's too
	if err != nil {
		t.Fatal(err)
	}
	// The workload's image, which no registry here serves and no spec names, imported by hand.
	for _, img := range e2e.Images(t) {
		if img.Ref != e2e.HelloImage {
			continue
		}
		b, err := os.ReadFile(img.Archive)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range cp.nodes {
			e2e.WriteFile(t, filepath.Join(n.m.Root(), "/root/hello.tar"), string(b))
			n.m.MustExec(t, "/usr/local/bin/ctr", "-n", "k8s.io", "images", "import", "/root/hello.tar")
		}
	}
	cp.mustKubectlT(t, "apply", "-f", deployment)
	out = e2e.WaitFor(t, 3*time.Minute, "the Deployment's 3 pods to run, one per node", func() (string, bool) {
		out, err := cp.kubectl("get", "pods", "-l", "app=hello", "--no-headers", "-o", "custom-columns=NAME:.metadata.name,PHASE:.status.phase,NODE:.spec.nodeName")
		nodes := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[1] == "Running" {
				nodes[f[2]] = true
			}
		}
		return out, err == nil && len(nodes) == 3
	})
	pod := strings.Fields(out)[0]
	if logs := cp.mustKubectlT(t, "logs", pod); !strings.Contains(logs, "listening on :18080") {
		t.Errorf("kubectl logs %s: %q, want the workload's first line", pod, logs)
	}
	if got := cp.mustKubectlT(t, "exec", pod, "--", "/hello", "get", "http://127.0.0.1:18080/"); !strings.HasPrefix(got, "hello from ") {
		t.Errorf("kubectl exec %s -- /hello get: %q, want the workload's answer", pod, got)
	}
}
