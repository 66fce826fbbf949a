package cloudup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/model"
)

// fakeRolling is a cloud of groups whose Replace puts a new, up-to-date machine in the old one's place and
// moves its etcd members there (what protokube does), unless stuck; and the Health of those members.
type fakeRolling struct {
	groups   []RollingGroup
	members  []MemberHealth
	down     map[string]bool // members that are unhealthy whatever runs them, by "cluster/member"
	problems []string        // what Validate says
	stuck    bool            // a replacement never gets its members
	failAt   string          // the machine whose Replace fails
	replaced []string
	log      []string // what was done, in order
	n        int
}

func (f *fakeRolling) Groups(ctx context.Context, igs []*model.InstanceGroup) ([]RollingGroup, error) {
	var out []RollingGroup
	for _, ig := range igs {
		for _, g := range f.groups {
			if g.Name == ig.Metadata.Name {
				out = append(out, g)
			}
		}
	}
	return out, nil
}

func (f *fakeRolling) Replace(ctx context.Context, old RollingInstance) error {
	if old.ID == f.failAt {
		f.log = append(f.log, "replace "+old.ID+" failed")
		return errors.New("the cloud said 503")
	}
	f.replaced = append(f.replaced, old.ID)
	f.log = append(f.log, "replace "+old.ID)
	f.n++
	repl := RollingInstance{Group: old.Group, ControlPlane: old.ControlPlane, ID: fmt.Sprintf("new-%d", f.n), Ready: true}
	for gi := range f.groups {
		for ii, i := range f.groups[gi].Instances {
			if i.ID == old.ID {
				f.groups[gi].Instances[ii] = repl
			}
		}
	}
	for k, m := range f.members {
		if m.Holder == old.ID {
			f.members[k].Holder = ""
			if !f.stuck {
				f.members[k].Holder = repl.ID
			}
		}
	}
	return nil
}

func (f *fakeRolling) Basis() string { return "the fake" }

func (f *fakeRolling) Etcd(ctx context.Context) ([]MemberHealth, error) {
	out := make([]MemberHealth, len(f.members))
	for k, m := range f.members {
		m.Healthy = m.Holder != "" && !f.down[m.String()]
		if !m.Healthy {
			m.Why = "down"
		}
		out[k] = m
	}
	return out, nil
}

func (f *fakeRolling) Validate(ctx context.Context) ([]string, error) {
	f.log = append(f.log, "validate")
	return f.problems, nil
}

// threeByThree is a cluster of three control-plane machines (cp-a, cp-b, cp-c: i-a, i-b, i-c) each running one
// member (a, b, c) of etcd clusters main and events, and a node group of two machines; every machine needs an
// update.
func threeByThree() (*fakeRolling, []*model.InstanceGroup) {
	f := &fakeRolling{down: map[string]bool{}}
	var igs []*model.InstanceGroup
	for _, z := range []string{"a", "b", "c"} {
		ig := &model.InstanceGroup{}
		ig.Metadata.Name, ig.Spec.Role = "cp-"+z, model.RoleControlPlane
		igs = append(igs, ig)
		f.groups = append(f.groups, RollingGroup{Name: ig.Metadata.Name, ControlPlane: true, Min: 1, Target: 1, Max: 1,
			Instances: []RollingInstance{{Group: ig.Metadata.Name, ControlPlane: true, ID: "i-" + z, NeedsUpdate: true, Ready: true, Reason: "old"}}})
		for _, ec := range []string{"main", "events"} {
			f.members = append(f.members, MemberHealth{EtcdCluster: ec, Member: z, Holder: "i-" + z})
		}
	}
	nodes := &model.InstanceGroup{}
	nodes.Metadata.Name, nodes.Spec.Role = "nodes", model.RoleNode
	igs = append([]*model.InstanceGroup{nodes}, igs...) // out of order: selectGroups puts the control plane first
	f.groups = append(f.groups, RollingGroup{Name: "nodes", Min: 2, Target: 2, Max: 2, Instances: []RollingInstance{
		{Group: "nodes", ID: "i-n1", NeedsUpdate: true, Ready: true}, {Group: "nodes", ID: "i-n2", Ready: true}}})
	return f, igs
}

// newTestRoller is a roller of threeByThree's cloud, changed by setup (when not nil), with options o and short
// waits, and the cloud's groups, control plane first.
func newTestRoller(t *testing.T, setup func(f *fakeRolling), o RollingOptions) (*fakeRolling, *roller, []RollingGroup) {
	t.Helper()
	f, igs := threeByThree()
	if setup != nil {
		setup(f)
	}
	igs, err := selectGroups("c", igs, nil)
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := f.Groups(context.Background(), igs)
	o.Timeout, o.Interval = 50*time.Millisecond, 10*time.Millisecond
	return f, &roller{cloud: f, health: f, igs: igs, o: o}, groups
}

func TestRollingReplaceOrderAndChecks(t *testing.T) {
	tests := []struct {
		name         string
		setup        func(f *fakeRolling)
		force        bool
		wantReplaced []string
		wantErr      string // a part of the error; "" none
	}{
		{name: "control plane first, then the nodes that need it", wantReplaced: []string{"i-a", "i-b", "i-c", "i-n1"}},
		{name: "force replaces the up-to-date node too", force: true, wantReplaced: []string{"i-a", "i-b", "i-c", "i-n1", "i-n2"}},
		{
			name:    "another member of main down: the first control-plane machine is refused",
			setup:   func(f *fakeRolling) { f.down["main/c"] = true },
			wantErr: "etcd-main: without i-a only 1 of its 3 members would be healthy (b), below its quorum of 2; unhealthy: c (down)",
		},
		{
			name:    "the cluster does not validate: nothing is taken down",
			setup:   func(f *fakeRolling) { f.problems = []string{"Node node-1: not Ready"} },
			wantErr: "the cluster does not validate (checks based on the fake), so i-a (cp-a) is not taken down:\n  Node node-1: not Ready",
		},
		{
			name:         "a replacement whose members are never claimed stops the update after it",
			setup:        func(f *fakeRolling) { f.stuck = true },
			wantReplaced: []string{"i-a"},
			wantErr:      "replacing i-a (cp-a): not done after 50ms: etcd members not healthy yet: main/a: down; events/a: down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			f, r, groups := newTestRoller(t, tt.setup, RollingOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			var err error
			for _, i := range toReplace(groups, tt.force) {
				if err = r.replace(context.Background(), i); err != nil {
					break
				}
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantReplaced, f.replaced); diff != "" {
				t.Errorf("replaced (-want +got):\n%s", diff)
			}
			// Each control-plane replacement comes after its quorum checks and a validation.
			for _, id := range f.replaced {
				if !strings.HasPrefix(id, "i-n") && !strings.Contains(logs.String(), "msg=\"etcd quorum check\" instance="+id) {
					t.Errorf("no quorum check logged before replacing %s:\n%s", id, logs.String())
				}
			}
			for k, l := range f.log {
				if strings.HasPrefix(l, "replace ") && (k == 0 || f.log[k-1] != "validate") {
					t.Errorf("%s without a validation just before it: %v", l, f.log)
				}
			}
		})
	}
}

// When a rolling update stops, it says what it did: how many machines it replaced, and whether the one it stopped
// at was taken down (it said "stopped after replacing 0 of 4 machines, before taking down anything more" after
// it had taken one down).
func TestRollingStopSaysWhatWasDone(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f *fakeRolling)
		wantErr string
		wantOut string
	}{
		{
			name:    "the first replacement never gets its members: it was taken down",
			setup:   func(f *fakeRolling) { f.stuck = true },
			wantErr: "cluster c: rolling update stopped: 0 of 4 machines replaced, and i-a (cp-a) taken down, whose replacement is not confirmed ready and healthy; nothing more was taken down: replacing i-a (cp-a): not done after 50ms:",
		},
		{
			name:    "the cluster does not validate: nothing was taken down",
			setup:   func(f *fakeRolling) { f.problems = []string{"Node node-1: not Ready"} },
			wantErr: "cluster c: rolling update stopped before taking down i-a (cp-a): 0 of 4 machines replaced, and nothing more taken down: the cluster does not validate",
		},
		{
			name:    "the cloud fails the second replacement: it may be down",
			setup:   func(f *fakeRolling) { f.failAt = "i-b" },
			wantErr: "cluster c: rolling update stopped: 1 of 4 machines replaced; asking the cloud to replace i-b (cp-b) failed, so it may or may not have been taken down; nothing more was: the cloud said 503",
			wantOut: "Replaced i-a (cp-a): 1 of 4.\n",
		},
		{
			name:    "done",
			wantOut: "Replaced i-a (cp-a): 1 of 4.\nReplaced i-b (cp-b): 2 of 4.\nReplaced i-c (cp-c): 3 of 4.\nReplaced i-n1 (nodes): 4 of 4.\nRolling update of cluster c is done: 4 machines replaced.\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			_, r, groups := newTestRoller(t, tt.setup, RollingOptions{Logger: slog.New(slog.DiscardHandler), Out: &out})
			err := r.replaceAll(context.Background(), "c", toReplace(groups, false))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)) {
				t.Errorf("error %v,\nwant one starting %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantOut, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuorumFiveMembers(t *testing.T) {
	tests := []struct {
		down   []string
		wantOK bool
	}{
		{nil, true},
		{[]string{"main/d"}, true},                // 3 of 5 stay without i-a: a quorum
		{[]string{"main/d", "main/e"}, false},     // 2 of 5
		{[]string{"events/d", "events/e"}, false}, // any etcd cluster counts
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.down, ","), func(t *testing.T) {
			f := &fakeRolling{down: map[string]bool{}}
			for _, ec := range []string{"main", "events"} {
				for _, m := range []string{"a", "b", "c", "d", "e"} {
					f.members = append(f.members, MemberHealth{EtcdCluster: ec, Member: m, Holder: "i-" + m})
				}
			}
			for _, d := range tt.down {
				f.down[d] = true
			}
			r := &roller{health: f, o: RollingOptions{Logger: slog.New(slog.DiscardHandler)}}
			err := r.quorum(context.Background(), RollingInstance{ID: "i-a", Group: "cp-a", ControlPlane: true}, r.o.Logger)
			if (err == nil) != tt.wantOK {
				t.Errorf("quorum check: %v, want ok %t", err, tt.wantOK)
			}
		})
	}
}

func TestRollingTable(t *testing.T) {
	f, igs := threeByThree()
	igs, _ = selectGroups("c", igs, []string{"nodes", "cp-b"})
	groups, _ := f.Groups(context.Background(), igs)
	var out bytes.Buffer
	writeRollingTable(&out, groups)
	want := `NAME   STATUS       NEEDUPDATE  READY  MIN  TARGET  MAX
cp-b   NeedsUpdate  1           1      1    1       1
nodes  NeedsUpdate  1           2      2    2       2

INSTANCE  GROUP  ZONE  STATUS       READY  REASON
i-b       cp-b         NeedsUpdate  true   old
i-n1      nodes        NeedsUpdate  true   
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if _, err := selectGroups("c", igs, []string{"gpu"}); err == nil || !strings.Contains(err.Error(), "--instance-group gpu: cluster c has no such instance group") {
		t.Errorf("an unknown --instance-group: %v", err)
	}
}
