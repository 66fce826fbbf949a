package nodetasks

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// fakeNAT is kubeup's table in memory: rule nil is no table; sets counts the writes.
type fakeNAT struct {
	rule *MasqueradeRule
	sets int
}

func (f *fakeNAT) Masquerade(context.Context) (*MasqueradeRule, error) { return f.rule, nil }
func (f *fakeNAT) SetMasquerade(_ context.Context, r MasqueradeRule) error {
	f.rule = &r
	f.sets++
	return nil
}

type natWorld struct{ nat NATTable }

func (w natWorld) NATTable() NATTable { return w.nat }

func masqueradeGraph(source, except string) func() *engine.Graph[natWorld] {
	return func() *engine.Graph[natWorld] {
		g := engine.NewGraph[natWorld]()
		engine.Add(g, &PodMasquerade[natWorld]{Name: "pod-egress", Source: source, Except: except})
		return g
	}
}

// The rule is made once, changed when the ranges change, and a table holding something else is replaced.
func TestPodMasquerade(t *testing.T) {
	ctx := context.Background()
	nat := &fakeNAT{}
	w := natWorld{nat}
	plan := enginetest.ApplyThenNoChanges(t, ctx, w, masqueradeGraph("100.96.0.0/11", "100.64.0.0/10"))
	if len(plan.Changes) != 1 || plan.Changes[0].Action != engine.Create {
		t.Errorf("first run: %+v, want the rule created", plan.Changes)
	}
	if want := (MasqueradeRule{Source: "100.96.0.0/11", Except: "100.64.0.0/10"}); nat.rule == nil || *nat.rule != want || nat.sets != 1 {
		t.Errorf("table %+v after %d writes, want %+v after 1", nat.rule, nat.sets, want)
	}
	plan = enginetest.ApplyThenNoChanges(t, ctx, w, masqueradeGraph("10.244.0.0/16", "10.0.0.0/8"))
	if len(plan.Changes) != 1 || len(plan.Changes[0].Fields) != 2 {
		t.Errorf("new ranges: %+v, want both fields changed", plan.Changes)
	}
	nat.rule = &MasqueradeRule{} // a table that holds something else
	plan = enginetest.ApplyThenNoChanges(t, ctx, w, masqueradeGraph("10.244.0.0/16", "10.0.0.0/8"))
	if len(plan.Changes) != 1 || nat.rule.Source != "10.244.0.0/16" {
		t.Errorf("a table of something else: %+v, then %+v", plan.Changes, nat.rule)
	}
}

// Not in the node's namespace (nodeup converging a root from outside), the task changes nothing and says so.
func TestPodMasqueradeWithoutTable(t *testing.T) {
	plan := enginetest.ApplyThenNoChanges(t, context.Background(), natWorld{}, masqueradeGraph("100.96.0.0/11", "100.64.0.0/10"))
	if len(plan.Changes) != 0 {
		t.Errorf("without the node's table: %+v, want no change", plan.Changes)
	}
}

func TestPodMasqueradeValidate(t *testing.T) {
	for _, tt := range []struct{ source, except, want string }{
		{"100.96.0.1/11", "100.64.0.0/10", `field Source: "100.96.0.1/11" is not an IPv4 network in canonical form`},
		{"100.96.0.0/11", "fd00::/8", `field Except: "fd00::/8" is not an IPv4 network`},
		{"", "100.64.0.0/10", `field Source: "" is not`},
	} {
		err := (&PodMasquerade[natWorld]{Name: "pod-egress", Source: tt.source, Except: tt.except}).Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%q, %q) = %v, want %q", tt.source, tt.except, err, tt.want)
		}
	}
}

func TestPodMasqueradeDeps(t *testing.T) {
	enginetest.CheckDeps(t, &PodMasquerade[natWorld]{Name: "x", After: []engine.Task{&File{Path: "/x"}}})
}

// deniedNAT is a table this process may not read: no CAP_NET_ADMIN in its network namespace.
type deniedNAT struct{ fakeNAT }

func (deniedNAT) Masquerade(context.Context) (*MasqueradeRule, error) {
	return nil, fmt.Errorf("netlink receive: %w", unix.EPERM)
}

// Without the right to change the namespace's netfilter (a container that shares another's network), the run
// changes nothing and does not fail: the rule is the node's own nodeup's and protokube's to make.
func TestPodMasqueradeNotPermitted(t *testing.T) {
	nat := &deniedNAT{}
	plan := enginetest.ApplyThenNoChanges(t, context.Background(), natWorld{nat}, masqueradeGraph("100.96.0.0/11", "100.64.0.0/10"))
	if len(plan.Changes) != 0 || nat.sets != 0 {
		t.Errorf("not permitted: changes %+v, %d writes; want none", plan.Changes, nat.sets)
	}
}
