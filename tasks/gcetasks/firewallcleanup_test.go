package gcetasks

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// firewallGraph is the cluster's network, its https rule, its ssh rule when ssh, and the rules it keeps.
func firewallGraph(ssh bool) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		nw := engine.Add(g, &Network{Name: "net"}, engine.WithLifecycle(engine.ExistsAndValidates))
		keep := []*FirewallRule{engine.Add(g, &FirewallRule{Name: "kubeup-gce-example-com-https", Network: nw,
			SourceRanges: []string{"0.0.0.0/0"}, TargetTags: []string{"cp"}, Allowed: []FirewallAllow{{Protocol: "tcp", Ports: []string{"443"}}}})}
		if ssh {
			keep = append(keep, engine.Add(g, &FirewallRule{Name: "kubeup-gce-example-com-ssh", Network: nw,
				SourceRanges: []string{"10.0.0.0/8"}, TargetTags: []string{"cp"}, Allowed: []FirewallAllow{{Protocol: "tcp", Ports: []string{"22"}}}}))
		}
		engine.Add(g, &FirewallRules{Cluster: testCluster, Keep: keep})
		return g
	}
}

func TestFirewallRulesDeletesWhatTheSpecNoLongerAsks(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	enginetest.ApplyThenNoChanges(t, ctx, c, freshRuns(c, firewallGraph(true)))
	// Rules made by hand: without a description, with another cluster's, with one that only starts as this one's.
	for name, desc := range map[string]string{
		"by-hand":       "",
		"other-cluster": "kubeup: owned by cluster other.example.com",
		"lookalike":     c.ownedDescription() + " (copied)",
	} {
		op, err := c.Compute.Firewalls.Insert(testProject, &compute.Firewall{Name: name, Description: desc,
			Network: "projects/" + testProject + "/global/networks/net", SourceRanges: []string{"192.0.2.0/24"},
			Allowed: []*compute.FirewallAllowed{{IPProtocol: "tcp", Ports: []string{"8080"}}}}).Do()
		if err == nil {
			err = c.waitOperation(ctx, "making "+name, op)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	noSSH := firewallGraph(false)
	srv.ResetCalls()
	plan := mustRun(t, c, engine.DryRun, noSSH)
	var text strings.Builder
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FirewallRules/" + testCluster, "kubeup-gce-example-com-ssh"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the dry run does not show %q:\n%s", want, text.String())
		}
	}
	for _, hand := range []string{"by-hand", "other-cluster", "lookalike"} {
		if strings.Contains(text.String(), hand) {
			t.Errorf("the dry run mentions rule %s, made by hand:\n%s", hand, text.String())
		}
	}
	if calls := srv.Calls(); calls["compute.firewalls.list"] != 1 || len(mutatingCalls(calls)) > 0 {
		t.Errorf("dry run: calls %v, want one firewalls.list and nothing changed", calls)
	}

	srv.ResetCalls()
	mustRun(t, c, engine.Apply, noSSH)
	if got := mutatingCalls(srv.Calls()); got["compute.firewalls.delete"] != 1 || len(got) != 1 {
		t.Errorf("mutating calls %v, want one firewalls.delete", got)
	}
	var names []string
	if err := c.Compute.Firewalls.List(testProject).Pages(ctx, func(l *compute.FirewallList) error {
		for _, f := range l.Items {
			names = append(names, f.Name)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if want := []string{"by-hand", "kubeup-gce-example-com-https", "lookalike", "other-cluster"}; !slices.Equal(names, want) {
		t.Errorf("firewall rules %v, want %v", names, want)
	}

	srv.ResetCalls()
	if p := mustRun(t, c, engine.Apply, noSSH); !p.Empty() {
		t.Errorf("changes after the deletion: %v", p.Changes)
	}
	if m := mutatingCalls(srv.Calls()); len(m) > 0 {
		t.Errorf("converged run: mutating calls %v", m)
	}
}

func TestFirewallRulesOfAnotherCluster(t *testing.T) {
	c, _ := newTestCloud(t)
	g := func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		engine.Add(g, &FirewallRules{Cluster: "other.example.com"})
		return g
	}
	if _, err := runOnce(c, engine.DryRun, g); err == nil || !strings.Contains(err.Error(), "other.example.com") {
		t.Errorf("error %v, want one about the other cluster", err)
	}
}
