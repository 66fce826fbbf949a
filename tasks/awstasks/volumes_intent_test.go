package awstasks

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// The intent's life on one volume, as two instances see it (the volume moves between them): none, then the
// intent of whoever began last, then none again; each step one call, and only the intent tag ever changes.
func TestVolumesFormatIntent(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	a, b := f.instance(t, zoneA), f.instance(t, zoneA)
	pa, pb := f.provider(t, a, zoneA), f.provider(t, b, zoneA)
	tags := map[string]string{"kubernetes.io/cluster/c": "owned", "k8s.io/etcd/main": "a/a"}
	id := f.volume(t, zoneA, tags)

	type step struct {
		name  string
		do    func() error
		want  string         // FormatIntent after the step, as either instance reads it
		calls map[string]int // the step's calls
	}
	for _, s := range []step{
		{name: "a volume without the tag", do: func() error { return nil }},
		{name: "EndFormat of none", do: func() error { return pa.EndFormat(ctx, id) }, calls: map[string]int{"DeleteTags": 1}},
		{name: "a begins", do: func() error { return pa.BeginFormat(ctx, id) }, want: a.NodeID, calls: map[string]int{"CreateTags": 1}},
		{name: "a begins again", do: func() error { return pa.BeginFormat(ctx, id) }, want: a.NodeID, calls: map[string]int{"CreateTags": 1}},
		// a was interrupted; the volume moved to b, which formats it again.
		{name: "b begins", do: func() error { return pb.BeginFormat(ctx, id) }, want: b.NodeID, calls: map[string]int{"CreateTags": 1}},
		{name: "a ends (whoever began)", do: func() error { return pa.EndFormat(ctx, id) }, calls: map[string]int{"DeleteTags": 1}},
		{name: "b ends, none left", do: func() error { return pb.EndFormat(ctx, id) }, calls: map[string]int{"DeleteTags": 1}},
	} {
		f.s.ResetCalls()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.calls, f.s.Calls(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", s.name, diff)
		}
		for _, p := range []*Volumes{pa, pb} {
			f.s.ResetCalls()
			got, err := p.FormatIntent(ctx, id)
			if err != nil || got != s.want {
				t.Errorf("%s: FormatIntent by %s = %q, %v, want %q", s.name, p.me.NodeID, got, err, s.want)
			}
			if diff := cmp.Diff(map[string]int{"DescribeVolumes": 1}, f.s.Calls()); diff != "" {
				t.Errorf("%s: FormatIntent's calls (-want +got):\n%s", s.name, diff)
			}
		}
		// The volume's own tags never change.
		vols, err := pa.List(ctx, nil)
		if err != nil || len(vols) != 1 {
			t.Fatalf("%s: List = %+v, %v", s.name, vols, err)
		}
		want := maps.Clone(tags)
		if s.want != "" {
			want[FormatIntentTag] = s.want
		}
		if diff := cmp.Diff(want, vols[0].Tags); diff != "" {
			t.Errorf("%s: the volume's tags (-want +got):\n%s", s.name, diff)
		}
	}
}

// BeginFormat and EndFormat change the volume: what List read of it is forgotten, and the next Attached asks EC2.
func TestVolumesFormatIntentForgetsTheList(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me := f.instance(t, zoneA)
	p := f.provider(t, me, zoneA)
	id := f.volume(t, zoneA, nil)
	for _, c := range []struct {
		name string
		do   func(context.Context, string) error
	}{{"BeginFormat", p.BeginFormat}, {"EndFormat", p.EndFormat}} {
		if _, err := p.List(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.do(ctx, id); err != nil {
			t.Fatal(err)
		}
		f.s.ResetCalls()
		if _, err := p.Attached(ctx, id); err != nil {
			t.Fatal(err)
		}
		if n := f.s.Calls()["DescribeVolumes"]; n != 1 {
			t.Errorf("Attached after List and %s called DescribeVolumes %d times, want 1 (the listed read is stale)", c.name, n)
		}
	}
}

// Throttling and server errors are retryable (the engine tries again); the SDK's retryer rides out a share of
// them, and the intent is then recorded; a volume that does not exist is terminal and says so.
func TestVolumesFormatIntentErrors(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me := f.instance(t, zoneA)
	p := f.provider(t, me, zoneA)
	id := f.volume(t, zoneA, nil)
	calls := map[string]func() error{
		"FormatIntent": func() error { _, err := p.FormatIntent(ctx, id); return err },
		"BeginFormat":  func() error { return p.BeginFormat(ctx, id) },
		"EndFormat":    func() error { return p.EndFormat(ctx, id) },
	}
	for _, faults := range []fakeaws.Faults{{ThrottleRate: 1}, {ServerErrorRate: 1}} {
		if err := f.s.SetFaults(faults); err != nil {
			t.Fatal(err)
		}
		for _, name := range slices.Sorted(maps.Keys(calls)) {
			if err := calls[name](); engine.ClassOf(err) != engine.ClassRetryable || !strings.Contains(err.Error(), id) {
				t.Errorf("%s with faults %+v = %v, want a retryable error naming %s", name, faults, err, id)
			}
		}
	}

	// With kubeup's retryer (its backoff cut to nothing, for speed), half the calls throttled and a fifth failing
	// with 500: every call gets through, and the intent is there, then gone.
	cfg := f.cfg.Copy()
	cfg.RetryMaxAttempts = 0
	cfg.Retryer = func() aws.Retryer {
		return pushbackRetryer{retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = MaxAttempts
			o.RateLimiter = ratelimit.None
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})}
	}
	rp := NewVolumes(ec2.NewFromConfig(cfg), me, zoneA, VolumesOptions{Root: p.root})
	if err := f.s.SetFaults(fakeaws.Faults{ThrottleRate: 0.5, ServerErrorRate: 0.2, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	f.s.ResetCalls()
	if err := rp.BeginFormat(ctx, id); err != nil {
		t.Fatalf("BeginFormat under faults: %v", err)
	}
	if got, err := rp.FormatIntent(ctx, id); err != nil || got != me.NodeID {
		t.Errorf("FormatIntent under faults = %q, %v, want %s", got, err, me.NodeID)
	}
	if err := rp.EndFormat(ctx, id); err != nil {
		t.Fatalf("EndFormat under faults: %v", err)
	}
	if got, err := rp.FormatIntent(ctx, id); err != nil || got != "" {
		t.Errorf("FormatIntent after EndFormat under faults = %q, %v, want none", got, err)
	}
	if calls := f.s.Calls(); calls["CreateTags"]+calls["DeleteTags"]+calls["DescribeVolumes"] <= 4 {
		t.Errorf("calls %v: want some retried (the faults did not apply)", calls)
	}
	if err := f.s.SetFaults(fakeaws.Faults{}); err != nil {
		t.Fatal(err)
	}

	const missing = "vol-00000000000000bad"
	for name, do := range map[string]func() error{
		"FormatIntent": func() error { _, err := p.FormatIntent(ctx, missing); return err },
		"BeginFormat":  func() error { return p.BeginFormat(ctx, missing) },
		"EndFormat":    func() error { return p.EndFormat(ctx, missing) },
	} {
		if err := do(); engine.ClassOf(err) != engine.ClassTerminal || !strings.Contains(err.Error(), "InvalidVolume.NotFound") {
			t.Errorf("%s of a volume that does not exist = %v, want a terminal InvalidVolume.NotFound", name, err)
		}
	}
}

// The machines' policy of docs/aws.md allows every EC2 call protokube's volume provider makes, the intent's
// CreateTags and DeleteTags scoped to the cluster's volumes and to the intent's tag key.
func TestMachinePolicyAllowsWhatVolumesCall(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me, other := f.instance(t, zoneA), f.instance(t, zoneA)
	p := f.provider(t, me, zoneA)
	id, held := f.volume(t, zoneA, nil), f.volume(t, zoneA, nil)
	nvme(t, p, id)
	if _, err := f.client.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(held), InstanceId: aws.String(other.NodeID), Device: aws.String("/dev/xvdf")}); err != nil {
		t.Fatal(err)
	}
	f.s.ResetCalls()
	steps := []func() error{
		func() error { _, err := p.List(ctx, map[string]string{"k": ""}); return err },
		func() error { _, err := p.List(ctx, nil); return err },
		func() error { _, err := p.Attached(ctx, id); return err },
		func() error { _, err := p.Attach(ctx, id); return err },
		func() error { _, err := p.FormatIntent(ctx, id); return err },
		func() error { return p.BeginFormat(ctx, id) },
		func() error { return p.EndFormat(ctx, id) },
		func() error { return p.Detach(ctx, id) },
	}
	for i, do := range steps {
		if err := do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if _, err := p.Attach(ctx, held); err == nil {
		t.Fatal("Attach of a volume another instance holds succeeded")
	}

	policy := machinePolicy(t)
	allowed := map[string]bool{}
	for _, st := range policy.Statement {
		for _, a := range st.Action {
			allowed[a] = true
		}
	}
	for call := range f.s.Calls() {
		if !allowed["ec2:"+call] {
			t.Errorf("docs/aws.md: the machines' policy does not allow ec2:%s, which protokube's volumes call", call)
		}
	}
	// The intent's statement: only the intent's tag, only on the cluster's volumes.
	var intent *policyStatement
	for i, st := range policy.Statement {
		if slices.Contains(st.Action, "ec2:CreateTags") {
			intent = &policy.Statement[i]
		}
	}
	if intent == nil {
		t.Fatal("docs/aws.md: no statement of the machines' policy allows ec2:CreateTags")
	}
	want := policyStatement{
		Effect: "Allow", Action: []string{"ec2:CreateTags", "ec2:DeleteTags"}, Resource: "arn:aws:ec2:*:*:volume/*",
		Condition: map[string]map[string]any{
			"StringEquals":              {"aws:ResourceTag/kubernetes.io/cluster/<cluster>": "owned"},
			"ForAllValues:StringEquals": {"aws:TagKeys": []any{FormatIntentTag}},
			"Null":                      {"aws:TagKeys": "false"},
		},
	}
	if diff := cmp.Diff(want, *intent); diff != "" {
		t.Errorf("docs/aws.md: the machines' statement of the format intent (-want +got):\n%s", diff)
	}
}

type policyStatement struct {
	Effect    string
	Action    []string
	Resource  any
	Condition map[string]map[string]any `json:",omitempty"`
}

// machinePolicy is the JSON policy under "The IAM policy the machines need" in docs/aws.md.
func machinePolicy(t *testing.T) struct{ Statement []policyStatement } {
	t.Helper()
	const doc = "../../docs/aws.md"
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## The IAM policy the machines need")
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(section)
	if !ok || m == nil {
		t.Fatalf("%s: no JSON policy under \"The IAM policy the machines need\"", doc)
	}
	var p struct{ Statement []policyStatement }
	if err := json.Unmarshal([]byte(m[1]), &p); err != nil {
		t.Fatalf("%s: the machines' policy: %v", doc, err)
	}
	return p
}

// kubeup update neither shows nor removes the intent of a node formatting a volume: the EBSVolume task leaves
// FormatIntentTag alone (managedKey).
func TestEBSVolumeLeavesTheFormatIntent(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t)
	build := volumeGraph(func() *EBSVolume { return etcdVolume("a", 20) })
	mustRun(t, c, engine.Apply, freshRuns(c, build))
	vols := allVolumes(t, c)
	if len(vols) != 1 {
		t.Fatalf("%d volumes, want 1", len(vols))
	}
	id := aws.ToString(vols[0].VolumeId)
	p := NewVolumes(c.EC2, volumetasks.Holder{NodeID: "i-0000000000000000a"}, zoneA, VolumesOptions{Root: t.TempDir()})
	if err := p.BeginFormat(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		if plan := mustRun(t, c, target, freshRuns(c, build)); !plan.Empty() {
			t.Errorf("%s with a format intent on the volume plans changes", target)
		}
		if got, err := p.FormatIntent(ctx, id); err != nil || got != "i-0000000000000000a" {
			t.Errorf("after %s: FormatIntent = %q, %v, want the intent kept", target, got, err)
		}
	}
}
