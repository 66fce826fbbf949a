package nodetasks

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"kubeup.dev/kubeup/engine"
)

// NATTable is kubeup's own nftables table of a network namespace (the node's): it holds the one rule that
// masquerades the pods' traffic leaving the cluster. Nothing outside that table is read or changed.
type NATTable interface {
	// Masquerade returns the table's rule: nil when the table is not there; a rule with empty fields when the
	// table holds something else than the one rule kubeup writes (which Set then replaces).
	Masquerade(ctx context.Context) (*MasqueradeRule, error)
	// SetMasquerade makes the table hold rule alone, in one transaction.
	SetMasquerade(ctx context.Context, rule MasqueradeRule) error
}

// MasqueradeRule masquerades, as the address of the interface it leaves by, every packet from Source that is not
// to Except (both IPv4 networks in canonical form): nftables' `ip saddr SOURCE ip daddr != EXCEPT masquerade`
// in the postrouting hook.
type MasqueradeRule struct {
	Source, Except string
}

// NATWorld is the world of PodMasquerade: the node's NAT table, nil where the process is not in the node's
// network namespace (a root converged from outside).
type NATWorld interface {
	NATTable() NATTable
}

// PodMasquerade is the node's masquerading of its pods' traffic to addresses outside the cluster (kubenet,
// docs/networking.md): a pod's packet to another pod or a Service keeps its address, and one to anything else
// (the internet, a cloud's API, another network of the VPC) leaves with the node's, which routes its answer back.
// It is kubeup's own nftables table (NFTablesTable); no iptables binary is needed on the node.
type PodMasquerade[C NATWorld] struct {
	// Name is the task's name (pod-egress).
	Name string
	// Source is the cluster's pod range (spec.networking.podCIDR).
	Source string
	// Except is what the pods reach unmasqueraded (spec.networking.nonMasqueradeCIDR: the pod and service ranges).
	Except string
	// After lists tasks to run first.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*PodMasquerade[NATWorld], NATWorld] = (*PodMasquerade[NATWorld])(nil)
	_ engine.Renderer[*PodMasquerade[NATWorld], NATWorld] = (*PodMasquerade[NATWorld])(nil)
	_ engine.Validator                                    = (*PodMasquerade[NATWorld])(nil)
)

func (p *PodMasquerade[C]) Key() engine.Key     { return engine.Key{Type: "PodMasquerade", Name: p.Name} }
func (p *PodMasquerade[C]) Deps() []engine.Task { return p.After }

// Validate checks that both networks are IPv4 networks in canonical form.
func (p *PodMasquerade[C]) Validate() error {
	for _, f := range []struct{ field, cidr string }{{"Source", p.Source}, {"Except", p.Except}} {
		prefix, err := netip.ParsePrefix(f.cidr)
		if err != nil || !prefix.Addr().Is4() || prefix.Masked() != prefix {
			return fmt.Errorf("field %s: %q is not an IPv4 network in canonical form (100.96.0.0/11)", f.field, f.cidr)
		}
	}
	return nil
}

// Find reads kubeup's table. Where the process is not in the node's network namespace (no table), the rule is
// taken as present and the log says so: nodeup converging a root from outside cannot reach the node's
// namespace; protokube's rounds and nodeup on the node itself make the rule.
func (p *PodMasquerade[C]) Find(ctx context.Context, world C) (*PodMasquerade[C], error) {
	table := world.NATTable()
	if table == nil {
		engine.Logger(ctx).Info("not in the node's network namespace: the pods' masquerading is left to nodeup or protokube on the node", "task", p.Key())
		return &PodMasquerade[C]{Name: p.Name, Source: p.Source, Except: p.Except, After: p.After}, nil
	}
	rule, err := table.Masquerade(ctx)
	if errors.Is(err, unix.EPERM) {
		// No CAP_NET_ADMIN in the namespace: a container sharing another's network (a test's), never a node.
		engine.Logger(ctx).Warn("not permitted to read or write the node's nftables (no CAP_NET_ADMIN in this network namespace): the pods' traffic leaving the cluster is not masqueraded by this run", "task", p.Key(), "err", err)
		return &PodMasquerade[C]{Name: p.Name, Source: p.Source, Except: p.Except, After: p.After}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading nftables table %s: %w", NFTablesTable, err)
	}
	if rule == nil {
		return nil, nil
	}
	return &PodMasquerade[C]{Name: p.Name, Source: rule.Source, Except: rule.Except, After: p.After}, nil
}

func (p *PodMasquerade[C]) CheckChanges(actual, expected, changes *PodMasquerade[C]) error {
	return nil
}

// Render makes kubeup's table hold the rule alone.
func (p *PodMasquerade[C]) Render(ctx context.Context, world C, actual, expected, changes *PodMasquerade[C]) error {
	table := world.NATTable()
	if table == nil {
		return nil // Find took it as present
	}
	if err := table.SetMasquerade(ctx, MasqueradeRule{Source: expected.Source, Except: expected.Except}); err != nil {
		return fmt.Errorf("writing nftables table %s: %w", NFTablesTable, err)
	}
	engine.Logger(ctx).Info("masquerading the pods' traffic leaving the cluster", "from", expected.Source, "exceptTo", expected.Except)
	return nil
}
