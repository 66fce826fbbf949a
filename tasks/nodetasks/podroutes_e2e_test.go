//go:build e2e

package nodetasks

import (
	"context"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/e2e"
)

// netlinkWorld is PodRoutes' world on a real routing table.
type netlinkWorld struct{ table *NetlinkRoutes }

func (w netlinkWorld) RouteTable() RouteTable { return w.table }

// TestPodRoutesNetlink: in a network namespace of its own on a bridge (a node), PodRoutes routes another node's
// pod range via that node, with kubeup's protocol, through rtnetlink: a ping to an address of the range, which
// the other node holds, answers. A second run is no change; once no node holds the range, the route goes and the
// namespace's own routes stay. The test's process stays in its own namespace throughout (the table's socket is
// bound to the node's).
func TestPodRoutesNetlink(t *testing.T) {
	e2e.RequireTools(t, "ip", "ping")
	nw := e2e.Network(t)
	a, b := nw.Node(t, "routes-a"), nw.Node(t, "routes-b")
	b.MustRun(t, "ip", "addr", "add", "10.244.7.1/32", "dev", "lo") // a pod of b's range, as b's bridge would hold it
	table, err := NewNetlinkRoutes("/run/netns/" + a.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	w := netlinkWorld{table}
	ctx := context.Background()
	build := func(routes map[string]string) func() *engine.Graph[netlinkWorld] {
		return func() *engine.Graph[netlinkWorld] {
			g := engine.NewGraph[netlinkWorld]()
			engine.Add(g, &PodRoutes[netlinkWorld]{Name: "pod-ranges", Routes: routes})
			return g
		}
	}
	if out, err := a.Run(ctx, "ping", "-c1", "-W1", "10.244.7.1"); err == nil {
		t.Fatalf("10.244.7.1 answers before any route: %s", out)
	}
	hostRoutes, _ := e2e.Run(ctx, "ip", "route", "show", "proto", "111")

	want := map[string]string{"10.244.7.0/24": b.IP}
	for _, target := range []engine.Target{engine.Apply, engine.DryRun} {
		res, err := engine.Run(ctx, build(want)(), w, engine.Options{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		if target == engine.DryRun && len(res.Plan.Changes) != 0 {
			t.Errorf("a second run has changes: %v", res.Plan.Changes)
		}
	}
	if out := a.MustRun(t, "ip", "route", "show", "proto", "111"); strings.TrimSpace(out) != "10.244.7.0/24 via "+b.IP+" dev eth0" {
		t.Errorf("node a's routes of kubeup's: %q", out)
	}
	if out, err := a.Run(ctx, "ping", "-c1", "-W5", "10.244.7.1"); err != nil {
		t.Errorf("a pod address of node b's range does not answer from node a: %v\n%s", err, out)
	}
	if after, _ := e2e.Run(ctx, "ip", "route", "show", "proto", "111"); after != hostRoutes {
		t.Errorf("the host's own routes of kubeup's protocol changed: %q, then %q", hostRoutes, after)
	}

	if _, err := engine.Run(ctx, build(nil)(), w, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	if out := a.MustRun(t, "ip", "route", "show", "proto", "111"); strings.TrimSpace(out) != "" {
		t.Errorf("kubeup's routes left once no node holds a range: %q", out)
	}
	if out := a.MustRun(t, "ip", "route", "show", "default"); !strings.Contains(out, "via "+nw.Gateway) {
		t.Errorf("node a's default route: %q", out)
	}
}
