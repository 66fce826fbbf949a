//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// validate_healthy and validate_node3_etcd_stopped (TestControlPlane) are the issue's acceptance of `kubeup
// validate cluster` on the cluster of startControlPlane: three control-plane nodes, etcd over TLS, the real
// kube-apiserver, kube-controller-manager and kube-scheduler.
//
// Each node's real kubelet registers its Node and posts a mirror pod for each static pod it runs. What validate
// checks of etcd and DNS is real too: each member's /health at its DNS name over TLS with the keystore's client
// certificate, and BIND's records.
//
// validate exits 0 once healthy (--wait); with one node's etcd stopped (its protokube stopped, etcd's manifests
// removed, so kubelet stops both members' containers) it exits 1, naming the two members that node ran.

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
func validateEtcdStopped(t *testing.T, cp *controlPlane) {
	victim := cp.nodes[2]
	victim.m.MustExec(t, "systemctl", "stop", "protokube.service") // it ends between rounds; its claims and mounts stay
	for _, m := range []string{"etcd-main.manifest", "etcd-events.manifest"} {
		if err := os.Remove(filepath.Join(victim.m.Root(), manifests, m)); err != nil {
			t.Fatal(err)
		}
	}
	e2e.WaitFor(t, 2*time.Minute, "kubelet to stop etcd's containers on "+victim.id, func() (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := victim.m.Exec(ctx, "crictl", "ps", "-q", "--name", "^etcd-")
		return fmt.Sprintf("%q %v", out, err), err == nil && strings.TrimSpace(out) == ""
	})
	// The victim's kubelet reaches the API through its own kube-apiserver (127.0.0.1), which has no etcd now: it
	// can neither delete etcd's mirror pods nor post its status. The members validate names are what this checks.
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

// validateServiceStopped: node2's unit stopped (kubelet.service, or containerd.service, whose stop stops kubelet,
// which Requires= it), with its protokube (whose round would start it again within 2s): validate exits 1 naming
// node2 once its Node is NotReady; node2's protokube started again starts containerd and kubelet, and validate
// passes.
func validateServiceStopped(t *testing.T, cp *controlPlane, unit string) {
	victim := cp.nodes[1]
	// protokube first, and alone: a round it is in may start kubelet, and that job would cancel a stop of both at
	// once ("Job for kubelet.service canceled", found by the demo).
	victim.m.MustExec(t, "systemctl", "stop", "protokube.service")
	victim.m.MustExec(t, "systemctl", "stop", unit)
	out := e2e.WaitFor(t, 5*time.Minute, "validate to name "+victim.id+" (its Node NotReady once the controller-manager misses its kubelet)", func() (string, bool) {
		out, err := validateCluster(t, cp)
		return out, exitCode(err) == 1 && strings.Contains(out, "\nNode "+victim.id+": ")
	})
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Node ") && !strings.HasPrefix(line, "Node "+victim.id+": ") {
			t.Errorf("validate names another node than %s: %s", victim.id, line)
		}
	}
	victim.m.MustExec(t, "systemctl", "start", "protokube.service")
	// kubelet's back-off of the pods that failed while it was away can hold them for up to 5 minutes.
	if out, err := validateCluster(t, cp, "--wait", "6m"); err != nil {
		t.Fatalf("validate after %s's protokube started again: %v\n%s", victim.id, err, out)
	}
	for _, u := range []string{"containerd.service", "kubelet.service"} {
		if state := victim.m.Show(t, u, "ActiveState"); state != "active" {
			t.Errorf("%s on %s is %s after protokube's rounds, want active", u, victim.id, state)
		}
	}
}
