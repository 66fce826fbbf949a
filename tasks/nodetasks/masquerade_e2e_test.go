//go:build e2e

package nodetasks

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/e2e"
)

// TestPodMasqueradeNFTables: in a network namespace of its own (node a, on a bridge with node b), PodMasquerade
// writes kubeup's nftables table through nf_tables' netlink, and a connection from a pod address of a's
// (100.96.1.2) to node b's address then reaches b from a's own address, while one to an in-cluster address that b
// holds (100.100.0.9, inside nonMasqueradeCIDR) still comes from the pod's. A second run is no change, and the
// host's namespace has no table of kubeup's.
func TestPodMasqueradeNFTables(t *testing.T) {
	e2e.RequireTools(t, "ip")
	nw := e2e.Network(t)
	a, b := nw.Node(t, "masq-a"), nw.Node(t, "masq-b")
	const pod, inCluster = "100.96.1.2", "100.100.0.9"
	a.MustRun(t, "ip", "addr", "add", pod+"/32", "dev", "lo")
	a.MustRun(t, "ip", "route", "add", inCluster+"/32", "via", b.IP)
	b.MustRun(t, "ip", "addr", "add", inCluster+"/32", "dev", "lo")
	b.MustRun(t, "ip", "route", "add", pod+"/32", "via", a.IP)

	var l net.Listener
	b.Do(t, func() {
		var err error
		if l, err = net.Listen("tcp4", "0.0.0.0:0"); err != nil {
			t.Fatal(err)
		}
	})
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	// seenFrom connects from the pod's address in a to dst in b, and returns the source address b saw.
	seenFrom := func(dst string) string {
		t.Helper()
		accepted := make(chan string, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				accepted <- err.Error()
				return
			}
			accepted <- c.RemoteAddr().(*net.TCPAddr).IP.String()
			c.Close()
		}()
		a.Do(t, func() {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(pod)}, Timeout: 30 * time.Second}
			c, err := d.Dial("tcp4", net.JoinHostPort(dst, strconv.Itoa(port)))
			if err != nil {
				t.Fatalf("connecting from %s to %s: %v", pod, dst, err)
			}
			c.Close()
		})
		return <-accepted
	}
	if got := seenFrom(b.IP); got != pod {
		t.Fatalf("before any rule, b sees %s, want the pod's own address %s", got, pod)
	}

	host, err := NewNFTables("")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	hostBefore, err := host.Masquerade(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	table, err := NewNFTables("/run/netns/" + a.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	plan := enginetest.ApplyThenNoChanges(t, context.Background(), natWorld{table}, masqueradeGraph("100.96.0.0/11", "100.64.0.0/10"))
	if len(plan.Changes) != 1 || plan.Changes[0].Action != engine.Create {
		t.Errorf("first run: %+v, want the rule created", plan.Changes)
	}
	if got := seenFrom(b.IP); got != a.IP {
		t.Errorf("a pod's connection to an address outside the cluster reaches it from %s, want node a's address %s", got, a.IP)
	}
	if got := seenFrom(inCluster); got != pod {
		t.Errorf("a pod's connection to an in-cluster address reaches it from %s, want the pod's own address %s", got, pod)
	}
	if after, err := host.Masquerade(context.Background()); err != nil || (after == nil) != (hostBefore == nil) {
		t.Errorf("the host's namespace's table of kubeup's changed: %+v, then %+v (%v)", hostBefore, after, err)
	}
}
