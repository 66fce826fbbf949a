//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/model"
)

// backendManifest is the workload behind the Service the pods_talk test reaches: 2 replicas of the e2e workload,
// one on node2 and one on node3 (a node affinity and a required anti-affinity), on the pod network.
const backendManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: backend, namespace: kubeup-e2e}
spec:
  replicas: 2
  selector: {matchLabels: {app: backend}}
  template:
    metadata: {labels: {app: backend}}
    spec:
      tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node2, node3]}]
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: backend}}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: hello
        image: ` + e2e.HelloImage + `
        imagePullPolicy: IfNotPresent
        args: ["-listen=:18080"]
        readinessProbe: {httpGet: {path: /healthz, port: 18080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: backend, namespace: kubeup-e2e}
spec:
  selector: {app: backend}
  ports: [{name: http, port: 80, targetPort: 18080}]
`

// podsTalk: the cluster's pod network, kube-proxy and DNS. `kubeup update cluster --yes` (from the client, once
// the API answers) applies the cluster's addons, CoreDNS among them, and a second dry run has no change. Each
// node routes the other two nodes' pod ranges to them (protokube's routes, kubeup's protocol 111). The hello pod
// on node1 (nodes_and_pods' Deployment, on the pod network) then reaches a Service whose pods run on node2 and
// node3 by its DNS name: both pods answer through it, and each answers at its own pod address.
func podsTalk(t *testing.T, cp *controlPlane) {
	ctx := context.Background()
	update := func(args ...string) string {
		return cp.kubeupT(t, append([]string{"update", "cluster", cluster, "--kubeconfig", cp.kubeconfig}, args...)...)
	}
	t.Logf("kubeup update cluster --yes (the addons):\n%s", update("--yes"))
	if out := update(); !strings.Contains(out, "No changes") {
		t.Errorf("a dry run after the addons were applied has changes:\n%s", out)
	}

	ranges, ips := map[string]string{}, map[string]string{} // node -> its pod range, its InternalIP
	out := e2e.WaitFor(t, 2*time.Minute, "every Node to have a pod range", func() (string, bool) {
		out, err := cp.kubectl("get", "nodes", "--no-headers", "-o", "custom-columns=NAME:.metadata.name,RANGE:.spec.podCIDR,IP:.status.addresses[?(@.type==\"InternalIP\")].address")
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[1] != "<none>" {
				ranges[f[0]], ips[f[0]] = f[1], f[2]
				n++
			}
		}
		return out, err == nil && n == 3
	})
	t.Logf("the Nodes' pod ranges:\n%s", out)
	if cp.podNetwork == model.PodNetworkFlannel {
		out := e2e.WaitFor(t, 3*time.Minute, "flannel's pods Ready on the 3 nodes", func() (string, bool) {
			out, err := cp.kubectl("get", "pods", "-n", "kube-system", "-l", "app=flannel", "--no-headers", "-o",
				"custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,READY:.status.containerStatuses[0].ready")
			return out, err == nil && strings.Count(out, " true") == 3
		})
		t.Logf("flannel's pods:\n%s", out)
	}
	for _, n := range cp.nodes {
		// kubenet: protokube's routes via the other nodes' addresses, with kubeup's protocol. flannel: flanneld's,
		// through its VXLAN device, and none of kubeup's.
		var want []string
		show := []string{"route", "show", "proto", "111"}
		if cp.podNetwork == model.PodNetworkFlannel {
			show = []string{"route", "show", "dev", "flannel.1"}
		}
		for _, o := range cp.nodes {
			switch {
			case o == n:
			case cp.podNetwork == model.PodNetworkFlannel:
				want = append(want, ranges[o.id]+" via "+strings.Split(ranges[o.id], "/")[0]+" ")
			default:
				want = append(want, ranges[o.id]+" via "+ips[o.id]+" dev eth0")
			}
		}
		routes := e2e.WaitFor(t, time.Minute, n.id+"'s routes to the other nodes' pod ranges", func() (string, bool) {
			out, err := n.net.Run(ctx, "ip", show...)
			for _, w := range want {
				if !strings.Contains(out, w) {
					return fmt.Sprintf("%q, want %q: %v", out, want, err), false
				}
			}
			return out, err == nil
		})
		t.Logf("%s: ip %s:\n%s", n.id, strings.Join(show, " "), routes)
		if cp.podNetwork == model.PodNetworkFlannel {
			if out, err := n.net.Run(ctx, "ip", "route", "show", "proto", "111"); err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("%s: kubeup's routes under flannel: %q, %v; want none", n.id, out, err)
			}
			// VXLAN's 50 bytes: flannel.1 is the link's 1500 less them, and so are the bridge and the pods (the CNI
			// template's mtu).
			for _, dev := range []string{"flannel.1", "cni0"} {
				if out, err := n.net.Run(ctx, "ip", "-o", "link", "show", dev); err != nil || !strings.Contains(out, " mtu 1450 ") {
					t.Errorf("%s: ip link show %s: %q, %v; want mtu 1450", n.id, dev, out, err)
				}
			}
		}
	}

	manifest := filepath.Join(cp.dir, "backend.yaml")
	e2e.WriteFile(t, manifest, backendManifest)
	cp.mustKubectlT(t, "apply", "-f", manifest)
	backends := e2e.WaitFor(t, 3*time.Minute, "the backend's 2 pods ready on node2 and node3", func() (string, bool) {
		out, err := cp.kubectl("get", "pods", "-n", "kubeup-e2e", "-l", "app=backend", "--no-headers", "-o",
			"custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,IP:.status.podIP,READY:.status.containerStatuses[0].ready")
		nodes := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 4 && f[3] == "true" {
				nodes[f[1]] = true
			}
		}
		return out, err == nil && nodes["node2"] && nodes["node3"]
	})
	t.Logf("the backend's pods:\n%s", backends)

	client := ""
	hello := cp.mustKubectlT(t, "get", "pods", "-l", "app=hello", "--no-headers", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName")
	for _, line := range strings.Split(hello, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == "node1" {
			client = f[0]
		}
	}
	if client == "" {
		t.Fatalf("no hello pod on node1:\n%s", hello)
	}
	get := func(url string) (string, error) {
		return cp.kubectl("exec", client, "--", "/hello", "get", url)
	}
	for _, line := range strings.Split(strings.TrimSpace(backends), "\n") {
		f := strings.Fields(line)
		if out, err := get("http://" + f[2] + ":18080/"); err != nil || strings.TrimSpace(out) != "hello from "+f[0] {
			t.Errorf("the backend pod %s on %s at its pod address %s, from %s on node1: %v: %q", f[0], f[1], f[2], client, err, out)
		}
	}
	seen := map[string]bool{}
	for _, name := range []string{"backend.kubeup-e2e.svc.cluster.local", "backend.kubeup-e2e"} {
		e2e.WaitFor(t, 2*time.Minute, "both backend pods to answer through http://"+name+"/ from node1", func() (string, bool) {
			out, err := get("http://" + name + "/")
			if err == nil {
				seen[strings.TrimSpace(out)] = true
			}
			return fmt.Sprintf("%q %v (seen %v)", out, err, seen), err == nil && len(seen) == 2
		})
		clear(seen)
	}

	// Leaving the cluster: a server outside it (in the client's namespace, on the nodes' network, which routes no
	// pod range) sees the request of the pod on node1 come from node1's address (kubeup's masquerading rule).
	var l net.Listener
	cp.client.Do(t, func() {
		var err error
		if l, err = net.Listen("tcp4", cp.client.IP+":0"); err != nil {
			t.Fatal(err)
		}
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprint(w, host)
	}), ReadHeaderTimeout: time.Minute}
	go srv.Serve(l)
	defer srv.Close()
	node1 := cp.nodes[0]
	if out, err := get("http://" + l.Addr().String() + "/"); err != nil || strings.TrimSpace(out) != node1.net.IP {
		t.Errorf("a server outside the cluster, asked by %s on %s: %v: it saw %q, want %s's address %s", client, node1.id, err, out, node1.id, node1.net.IP)
	}
}

// kubeupT runs kubeup with args and the cluster's state store from the client's network namespace (which resolves
// the API's name through BIND), failing t, a subtest, when it fails; it returns its standard output.
func (cp *controlPlane) kubeupT(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := cp.client.Command(ctx, filepath.Join(cp.bin, "kubeup"), append(args, "--state", "file://"+cp.state)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	cp.printed.WriteString(stdout.String() + stderr.String())
	if err != nil {
		t.Fatalf("kubeup %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// setCoreDNS replaces the cluster's spec.addons.coreDNS with coreDNS (nil: none, the defaults) through
// `kubeup get` and `kubeup replace`, as an operator would.
func (cp *controlPlane) setCoreDNS(t *testing.T, coreDNS map[string]any) {
	t.Helper()
	var c map[string]any
	if err := yaml.Unmarshal([]byte(cp.kubeupT(t, "get", "cluster", cluster, "-o", "yaml")), &c); err != nil {
		t.Fatal(err)
	}
	spec := c["spec"].(map[string]any)
	delete(spec, "addons")
	if coreDNS != nil {
		spec["addons"] = map[string]any{"coreDNS": coreDNS}
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cp.dir, "addons-spec.yaml")
	e2e.WriteFile(t, file, string(b))
	cp.kubeupT(t, "replace", "-f", file)
}

// addonsChange: on the real kube-apiserver, an addon's version changed in the spec is, in the dry run, a change of
// its Deployment's image by field path; applied, the Deployment has the new image and a second dry run has no
// change. Disabled, the addon's objects are deleted, and the plan said so and why; enabled again, they come back
// and the cluster's DNS answers again.
func addonsChange(t *testing.T, cp *controlPlane) {
	update := func(args ...string) string {
		return cp.kubeupT(t, append([]string{"update", "cluster", cluster, "--kubeconfig", cp.kubeconfig}, args...)...)
	}
	noChanges := func(when string) {
		t.Helper()
		if out := update(); !strings.Contains(out, "No changes") {
			t.Errorf("a dry run %s has changes:\n%s", when, out)
		}
	}
	image := func() string {
		out, _ := cp.kubectl("get", "deployment", "coredns", "-n", "kube-system", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
		return strings.TrimSpace(out)
	}

	const newImage = "registry.k8s.io/coredns/coredns:v1.12.2"
	cp.setCoreDNS(t, map[string]any{"image": newImage})
	want := "spec.template.spec.containers[coredns].image: " + model.DefaultCoreDNSImage + " -> " + newImage
	if out := update(); !strings.Contains(out, "KubeObject/Deployment/kube-system/coredns") || !strings.Contains(out, want) {
		t.Errorf("the dry run of a new CoreDNS version does not show %q:\n%s", want, out)
	}
	update("--yes")
	if got := image(); got != newImage {
		t.Errorf("after the apply, CoreDNS's Deployment runs %q, want %q", got, newImage)
	}
	noChanges("after the new CoreDNS version was applied")

	cp.setCoreDNS(t, map[string]any{"enabled": false})
	out := update()
	for _, want := range []string{"Will delete resources:", "KubeObject/Deployment/kube-system/coredns (labelled kubeup.dev/addon=coredns; the addon is disabled)",
		"KubeObject/Service/kube-system/kube-dns", "KubeObject/ConfigMap/kube-system/coredns"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run of the disabled CoreDNS does not say %q:\n%s", want, out)
		}
	}
	update("--yes")
	for _, obj := range []string{"deployment/coredns", "service/kube-dns", "configmap/coredns", "serviceaccount/coredns"} {
		if out, err := cp.kubectl("get", obj, "-n", "kube-system"); err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("%s after CoreDNS was disabled: %v\n%s", obj, err, out)
		}
	}
	noChanges("after CoreDNS was disabled")

	cp.setCoreDNS(t, nil)
	update("--yes")
	noChanges("after CoreDNS was enabled again")
	if got := image(); got != model.DefaultCoreDNSImage {
		t.Errorf("CoreDNS enabled again runs %q, want %q", got, model.DefaultCoreDNSImage)
	}
	e2e.WaitFor(t, 3*time.Minute, "CoreDNS available again", func() (string, bool) {
		out, err := cp.kubectl("get", "deployment", "coredns", "-n", "kube-system", "-o", "jsonpath={.status.availableReplicas}/{.spec.replicas}")
		n, want, _ := strings.Cut(strings.TrimSpace(out), "/")
		return out, err == nil && n != "" && n == want
	})
}

// TestFlannel is TestControlPlane's cluster on the flannel pod network (spec.networking.podNetwork: flannel): the
// same three control-plane machines, then nodes_and_pods (3 Nodes Ready, a pod per node) and pods_talk, where
// `kubeup update cluster --yes` applies flannel's DaemonSet beside CoreDNS, flanneld runs on every node, each
// node routes the other nodes' ranges through flannel.1 and none with kubeup's protocol 111, and a pod on node1
// reaches the pods on node2 and node3 at their own addresses and through a Service by its name. `make
// e2e-flannel` runs it; `make test` does not (it boots three more machines: CI's time).
func TestFlannel(t *testing.T) {
	cp := startControlPlane(t, model.PodNetworkFlannel)
	cp.mustKubectlT(t, "create", "namespace", "kubeup-e2e") // (TestControlPlane's kubectl_answers makes it)
	t.Run("nodes_and_pods", func(t *testing.T) { nodesAndPods(t, cp) })
	t.Run("pods_talk", func(t *testing.T) { podsTalk(t, cp) })
}
