package gcetasks

import (
	"context"
	"fmt"
	"kubeup.dev/kubeup/internal/gcelabels"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
)

// FirewallRule is an ingress firewall rule of the cluster's network that the cluster owns: it allows what
// Allowed lists from SourceRanges and instances tagged SourceTags to instances tagged TargetTags. Firewall rules
// have no labels: the cluster's carry its description (see Cloud), and deletion takes those. Its key is
// "FirewallRule/<Name>".
type FirewallRule struct {
	// Name is the rule's name, a GCE resource name: "control-plane-gce-example-com-https".
	Name string
	// Network is the network the rule is in. Required; cannot change.
	Network *Network
	// SourceRanges are the CIDRs allowed, SourceTags the network tags of the instances allowed; in any order.
	SourceRanges []string `kubeup:"set,nilempty"`
	SourceTags   []string `kubeup:"set,nilempty"`
	// TargetTags are the network tags of the instances the rule applies to; in any order.
	TargetTags []string `kubeup:"set,nilempty"`
	// Allowed are what is allowed: a protocol and its ports ("443", "2379-2381"); in any order.
	Allowed []FirewallAllow `kubeup:"set,nilempty"`
}

// FirewallAllow is a protocol ("tcp", "udp", "icmp", "all") and its ports (none: every port).
type FirewallAllow struct {
	Protocol string
	Ports    []string
}

// String is the allowance as the plan shows it: "tcp:443,2379-2381".
func (a FirewallAllow) String() string {
	if len(a.Ports) == 0 {
		return a.Protocol
	}
	return a.Protocol + ":" + strings.Join(a.Ports, ",")
}

var (
	_ engine.Resource[*FirewallRule, *Cloud] = (*FirewallRule)(nil)
	_ engine.Renderer[*FirewallRule, *Cloud] = (*FirewallRule)(nil)
	_ engine.Classed                         = (*FirewallRule)(nil)
)

func (f *FirewallRule) Key() engine.Key { return engine.Key{Type: "FirewallRule", Name: f.Name} }
func (f *FirewallRule) Deps() []engine.Task {
	if f.Network == nil {
		return nil
	}
	return []engine.Task{f.Network}
}
func (f *FirewallRule) APIClass() string { return "compute" }

// Find reads the rule from the project's rules (one firewalls.list per run), normalised: lists sorted, ports
// sorted. A rule of the name that is not the cluster's is an error: kubeup does not take over another's rule.
func (f *FirewallRule) Find(ctx context.Context, c *Cloud) (*FirewallRule, error) {
	all, err := c.firewalls(ctx)
	if err != nil {
		return nil, err
	}
	r := all[f.Name]
	if r == nil {
		return nil, nil
	}
	if r.Description != c.ownedDescription() {
		return nil, engine.Terminal(fmt.Errorf("a firewall rule named %s exists and is not cluster %s's (its description is %q, not %q): "+
			"rename it or delete it", f.Name, c.Cluster, r.Description, c.ownedDescription()))
	}
	a := &FirewallRule{
		Name:         r.Name,
		Network:      &Network{Name: lastSegment(r.Network)},
		SourceRanges: sortedCopy(r.SourceRanges),
		SourceTags:   sortedCopy(r.SourceTags),
		TargetTags:   sortedCopy(r.TargetTags),
	}
	if f.Network != nil && a.Network.Name == f.Network.Name {
		a.Network = f.Network
	}
	for _, al := range r.Allowed {
		got := FirewallAllow{Protocol: al.IPProtocol, Ports: sortedCopy(al.Ports)}
		for _, want := range f.Allowed { // the task's order of ports, when they are the same ports
			if want.Protocol == got.Protocol && slices.Equal(sortedCopy(want.Ports), got.Ports) {
				got = want
			}
		}
		a.Allowed = append(a.Allowed, got)
	}
	return a, nil
}

func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(s))
}

// CheckChanges requires a network, a valid name and something allowed from somewhere, and refuses to move the
// rule to another network.
func (f *FirewallRule) CheckChanges(actual, expected, changes *FirewallRule) error {
	switch {
	case !gcelabels.ValidName(expected.Name):
		return fmt.Errorf("field Name of firewall rule %q is not a GCE resource name (a lowercase letter, then up to 62 of a-z, 0-9 "+
			"and '-', not ending with '-')", expected.Name)
	case expected.Network == nil:
		return fmt.Errorf("field Network is required for firewall rule %s", expected.Name)
	case len(expected.Allowed) == 0:
		return fmt.Errorf("field Allowed of firewall rule %s is empty: name at least one protocol", expected.Name)
	case len(expected.SourceRanges) == 0 && len(expected.SourceTags) == 0:
		return fmt.Errorf("firewall rule %s has neither SourceRanges nor SourceTags: GCE would allow every source", expected.Name)
	}
	if actual != nil && changes.Network != nil {
		return fmt.Errorf("field Network of firewall rule %s cannot change from %s to %s: delete the rule and run again",
			expected.Name, actual.Network.Name, expected.Network.Name)
	}
	return nil
}

// Render creates the rule, or patches it to what the task says.
func (f *FirewallRule) Render(ctx context.Context, c *Cloud, actual, expected, changes *FirewallRule) error {
	defer c.reads.firewalls.Forget()
	fw := &compute.Firewall{
		Name:         expected.Name,
		Description:  c.ownedDescription(),
		Direction:    "INGRESS",
		SourceRanges: sortedCopy(expected.SourceRanges),
		SourceTags:   sortedCopy(expected.SourceTags),
		TargetTags:   sortedCopy(expected.TargetTags),
		// A patch that empties a list must send it.
		ForceSendFields: []string{"SourceRanges", "SourceTags", "TargetTags"},
	}
	for _, a := range expected.Allowed {
		fw.Allowed = append(fw.Allowed, &compute.FirewallAllowed{IPProtocol: a.Protocol, Ports: sortedCopy(a.Ports)})
	}
	what := "firewall rule " + expected.Name
	if actual == nil {
		fw.Network = fmt.Sprintf("projects/%s/global/networks/%s", c.Project, expected.Network.Name)
		op, err := c.Compute.Firewalls.Insert(c.Project, fw).Context(ctx).Do()
		err = c.mutate(ctx, "creating "+what, op, err)
		if isConflict(err) {
			return engine.NotReady(fmt.Errorf("creating %s: it exists already: reading it again: %w", what, err))
		}
		if err != nil {
			return err
		}
		engine.Logger(ctx).Info("created firewall rule", "name", expected.Name)
		return nil
	}
	op, err := c.Compute.Firewalls.Patch(c.Project, expected.Name, fw).Context(ctx).Do()
	if err := c.mutate(ctx, "changing "+what, op, err); err != nil {
		return err
	}
	engine.Logger(ctx).Info("changed firewall rule", "name", expected.Name)
	return nil
}
