//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/internal/e2e"
)

// validate_healthy and validate_node3_etcd_stopped (TestControlPlane) are the issue's acceptance of `kubeup
// validate cluster` on the cluster of startControlPlane: three control-plane nodes, etcd over TLS, the real
// kube-apiserver, kube-controller-manager and kube-scheduler.
//
// No real kubelet runs there (the stand-in runs the static pods' processes, and kubelet's own client
// certificates are not issued yet: docs/pki.md), so no kubelet registers Nodes or posts mirror pods. The test
// plays that half of kubelet through the API with the admin credentials (kubeletAPIStandIn): it registers one
// Node per network namespace, labelled with its instance group as nodeup's --node-labels would, renews its Ready
// condition with its address every 2s, and posts a mirror pod per manifest the stand-in runs (Running while its
// process runs), deleting it when the manifest goes. What validate checks of etcd and DNS is real: each member's
// /health at its DNS name over TLS with the keystore's client certificate, and BIND's records.
//
// validate exits 0 once healthy (--wait); with one node's etcd stopped (protokube killed, etcd's manifests
// removed, so the stand-in stops both members) it exits 1, naming the two members that node ran.

// validateCluster runs `kubeup validate cluster` from the client's network namespace and returns its stdout; what
// it printed goes to the sentinel's record (cp.printed).
func validateCluster(t *testing.T, cp *controlPlane, args ...string) (string, error) {
	t.Helper()
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := cp.client.Command(cctx, filepath.Join(cp.bin, "kubeup"), append([]string{"validate", "cluster", cluster,
		"--state", "file://" + cp.state, "--kubeconfig", cp.kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("kubeup validate cluster %s (%s): %v\n%s%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), err, stdout.String(), stderr.String())
	cp.printed.WriteString(stdout.String() + stderr.String())
	return stdout.String(), err
}

// validateHealthy: validate --wait exits 0 on the healthy cluster; -o json is healthy with 3 nodes and 6 members.
func validateHealthy(t *testing.T, cp *controlPlane) {
	out, err := validateCluster(t, cp, "--wait", "3m")
	if err != nil || !strings.Contains(out, "Your cluster "+cluster+" is ready") {
		t.Fatalf("validate cluster --wait 3m on a healthy cluster: %v", err)
	}
	out, err = validateCluster(t, cp, "-o", "json")
	var val struct {
		Healthy  bool
		Failures []any
		Nodes    []struct{ Name string }
		Etcd     []struct{ Healthy bool } `json:"etcdMembers"`
	}
	if err != nil || json.Unmarshal([]byte(out), &val) != nil || !val.Healthy || len(val.Failures) != 0 || len(val.Nodes) != 3 || len(val.Etcd) != 6 {
		t.Fatalf("validate -o json: %v: %+v, want healthy with 3 nodes and 6 members", err, val)
	}
	for _, m := range val.Etcd {
		if !m.Healthy {
			t.Errorf("validate -o json says healthy, but not every member is: %+v", val.Etcd)
		}
	}
}

// validateEtcdStopped: node3's etcd stops (protokube, which would write the manifests again, is killed first);
// validate exits 1 naming the member of etcd-main and of etcd-events whose names point at node3, and their
// missing pods.
func validateEtcdStopped(t *testing.T, cp *controlPlane, stand *kubeletAPIStandIn) {
	victim := cp.nodes[2]
	victim.proc.Kill()
	for _, m := range []string{"etcd-main.manifest", "etcd-events.manifest"} {
		if err := os.Remove(filepath.Join(victim.root, manifests, m)); err != nil {
			t.Fatal(err)
		}
	}
	e2e.WaitFor(t, time.Minute, "the stand-in for kubelet to stop etcd on "+victim.id, func() (string, bool) {
		_, main := victim.kubelet.Pod("etcd-main.manifest")
		_, events := victim.kubelet.Pod("etcd-events.manifest")
		return fmt.Sprint(main, events), !main && !events
	})
	e2e.WaitFor(t, time.Minute, "the stand-in for kubelet to delete etcd's mirror pods of "+victim.id, func() (string, bool) {
		return "", !stand.posts("etcd-main-"+victim.id) && !stand.posts("etcd-events-"+victim.id)
	})
	out, err := validateCluster(t, cp)
	if code := exitCode(err); code != 1 {
		t.Fatalf("validate with %s's etcd stopped exits %d (%v), want 1", victim.id, code, err)
	}
	failed := map[string]string{} // etcd cluster -> member named in an EtcdMember failure
	for _, m := range regexp.MustCompile(`(?m)^EtcdMember (main|events)/([\w-]+): `).FindAllStringSubmatch(out, -1) {
		if failed[m[1]] != "" {
			t.Errorf("two members of etcd-%s fail; only %s's was stopped", m[1], victim.id)
		}
		failed[m[1]] = m[2]
	}
	for _, ec := range []string{"main", "events"} {
		member := failed[ec]
		if member == "" {
			t.Errorf("validate names no member of etcd-%s", ec)
			continue
		}
		name := member + ".etcd-" + ec + ".internal." + cluster
		if addr, err := cp.client.Run(context.Background(), "dig", "+short", name, "A"); err != nil || strings.TrimSpace(addr) != victim.net.IP {
			t.Errorf("validate names member %s of etcd-%s, whose name %s points at %q (%v), not at %s (%s)", member, ec, name, addr, err, victim.id, victim.net.IP)
		}
		if !strings.Contains(out, "Pod kube-system/etcd-"+ec+"-"+victim.id+": etcd-"+ec+" does not run on control-plane node "+victim.id) {
			t.Errorf("validate does not say that etcd-%s does not run on %s", ec, victim.id)
		}
	}
}

// exitCode is the exit status of a command's error: 0 for none, -1 when it did not exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(interface{ ExitCode() int }); ok {
		return ee.ExitCode()
	}
	return -1
}

// kubeletAPIStandIn plays, for the test, the part of kubelet that talks to the API (see validateHealthy).
type kubeletAPIStandIn struct {
	t      *testing.T
	cp     *controlPlane
	server string // https://<node1's address>:<port>, reached as api.<cluster>
	http   *http.Client
	mu     sync.Mutex
	posted map[string]bool // mirror pods posted, by name
}

// posts reports whether the mirror pod name is posted.
func (s *kubeletAPIStandIn) posts(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posted[name]
}

func newKubeletAPIStandIn(t *testing.T, cp *controlPlane) *kubeletAPIStandIn {
	t.Helper()
	b, err := os.ReadFile(cp.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Clusters []struct {
			Name    string
			Cluster struct {
				Server string
				CA     []byte `json:"certificate-authority-data"`
			}
		}
		Users []struct {
			Name string
			User struct {
				Cert []byte `json:"client-certificate-data"`
				Key  []byte `json:"client-key-data"`
			}
		}
	}
	if err := yaml.Unmarshal(b, &kc); err != nil || len(kc.Clusters) != 1 || len(kc.Users) != 1 {
		t.Fatalf("kubeconfig %s: %v, want one cluster and one user", cp.kubeconfig, err)
	}
	pair, err := tls.X509KeyPair(kc.Users[0].User.Cert, kc.Users[0].User.Key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(kc.Clusters[0].Cluster.CA)
	u, err := url.Parse(kc.Clusters[0].Cluster.Server)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	// The test runs on the host, which reaches the nodes on the bridge but resolves nothing through BIND.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: u.Hostname()}}
	return &kubeletAPIStandIn{t: t, cp: cp, server: "https://" + net.JoinHostPort(cp.nodes[0].net.IP, port),
		http: &http.Client{Transport: tr, Timeout: 10 * time.Second}, posted: map[string]bool{}}
}

// call sends a JSON body (nil: none) and returns the status; a transport error is status 0.
func (s *kubeletAPIStandIn) call(method, path, contentType string, body any) (int, string) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Error(err)
			return 0, ""
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.server+path, r)
	if err != nil {
		s.t.Error(err)
		return 0, ""
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// run syncs every 2s until stop is called.
func (s *kubeletAPIStandIn) run() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			s.sync()
			select {
			case <-done:
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (s *kubeletAPIStandIn) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC().Format(time.RFC3339)
	for i, n := range s.cp.nodes {
		node := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{
			"name": n.id, "labels": map[string]string{"kubeup.dev/instancegroup": fmt.Sprintf("control-plane-a-%d", i+1)}}}
		if code, msg := s.call(http.MethodPost, "/api/v1/nodes", "application/json", node); code != http.StatusCreated && code != http.StatusConflict {
			s.t.Logf("the stand-in for kubelet could not register %s: %d %s", n.id, code, msg)
			continue
		}
		status := map[string]any{"status": map[string]any{
			"conditions": []map[string]string{{"type": "Ready", "status": "True", "reason": "KubeletReady",
				"message": "the test's stand-in for kubelet", "lastHeartbeatTime": now, "lastTransitionTime": now}},
			"addresses": []map[string]string{{"type": "InternalIP", "address": n.net.IP}, {"type": "Hostname", "address": n.id}},
		}}
		s.call(http.MethodPatch, "/api/v1/nodes/"+n.id+"/status", "application/strategic-merge-patch+json", status)
		running := map[string]bool{}
		for _, p := range n.kubelet.Pods() {
			name := strings.TrimSuffix(p.Manifest, ".manifest")
			running[name+"-"+n.id] = true
			pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{
				"name": name + "-" + n.id, "namespace": "kube-system",
				"annotations": map[string]string{"kubernetes.io/config.mirror": "stand-in", "kubernetes.io/config.source": "file"}},
				"spec": map[string]any{"nodeName": n.id, "containers": []map[string]string{{"name": name, "image": "stand-in"}}}}
			if code, msg := s.call(http.MethodPost, "/api/v1/namespaces/kube-system/pods", "application/json", pod); code != http.StatusCreated && code != http.StatusConflict {
				s.t.Logf("the stand-in for kubelet could not post mirror pod %s-%s: %d %s", name, n.id, code, msg)
				continue
			}
			s.posted[name+"-"+n.id] = true
			phase, ready := "Running", "True"
			if p.PID == 0 {
				phase, ready = "Pending", "False"
			}
			s.call(http.MethodPatch, "/api/v1/namespaces/kube-system/pods/"+name+"-"+n.id+"/status", "application/merge-patch+json",
				map[string]any{"status": map[string]any{"phase": phase, "conditions": []map[string]string{{"type": "Ready", "status": ready}}}})
		}
		for name := range s.posted {
			if strings.HasSuffix(name, "-"+n.id) && !running[name] {
				if code, _ := s.call(http.MethodDelete, "/api/v1/namespaces/kube-system/pods/"+name+"?gracePeriodSeconds=0", "application/json", nil); code == http.StatusOK || code == http.StatusNotFound {
					delete(s.posted, name)
				}
			}
		}
	}
}
