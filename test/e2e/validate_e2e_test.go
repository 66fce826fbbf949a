//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/staticpods"
)

// validate_healthy and validate_node3_etcd_stopped (TestControlPlane) are the issue's acceptance of `kubeup
// validate cluster` on the cluster of startControlPlane: three control-plane nodes, etcd over TLS, the real
// kube-apiserver, kube-controller-manager and kube-scheduler.
//
// No real kubelet runs there (the stand-in runs the static pods' processes, and kubelet's own client
// certificates are not issued yet: docs/pki.md), so no kubelet registers Nodes or posts mirror pods. The test
// plays that half of kubelet through the API with the admin credentials, with the code the demo uses
// (staticpods.KubeletAPI, one per node): it registers one Node per network namespace, with the labels of the
// kubelet flags protokube wrote on the node (its instance group), renews its Ready condition with its address
// every 2s, and posts a mirror pod per manifest the stand-in runs (Running while its process runs), deleting it
// when the manifest goes. What validate checks of etcd and DNS is real: each member's
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
func validateEtcdStopped(t *testing.T, cp *controlPlane, stand kubeletAPIStandIns) {
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
		api := stand[victim.id]
		return "", !api.Mirrored("etcd-main-"+victim.id) && !api.Mirrored("etcd-events-"+victim.id)
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

// kubeletAPIStandIns are the stand-ins for kubelet's API half (staticpods.KubeletAPI), one per node, by node id.
type kubeletAPIStandIns map[string]*staticpods.KubeletAPI

// startKubeletAPIStandIns starts one per node, reporting the pods of the node's stand-in for kubelet, and
// reaching the API at the node's own address (its kube-apiserver, as a control-plane kubelet does; the other
// nodes' after a failed round) with the admin kubeconfig. They stop in t.Cleanup, or earlier with stop.
func startKubeletAPIStandIns(t *testing.T, cp *controlPlane) kubeletAPIStandIns {
	t.Helper()
	out := kubeletAPIStandIns{}
	for _, n := range cp.nodes {
		logFile := filepath.Join(cp.dir, n.id+"-kubelet-api.log")
		f, err := os.Create(logFile)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		servers := []string{n.net.IP}
		for _, o := range cp.nodes {
			if o != n {
				servers = append(servers, o.net.IP)
			}
		}
		api, err := staticpods.StartKubeletAPI(staticpods.KubeletAPIConfig{NodeName: n.id, Address: n.net.IP, Root: n.root,
			Kubeconfig: cp.kubeconfig, ServerAddresses: servers, Pods: n.kubelet.Pods, Log: slog.New(slog.NewTextHandler(f, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(api.Stop)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s's kubelet API stand-in:\n%s", n.id, e2e.Tail(logFile, 20))
			}
		})
		out[n.id] = api
	}
	return out
}

// stop stops them all (each can stop twice).
func (s kubeletAPIStandIns) stop() {
	for _, api := range s {
		api.Stop()
	}
}
