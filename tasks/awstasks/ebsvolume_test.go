package awstasks

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/fakeaws"
)

// etcdVolume is a volume as the model states one.
func etcdVolume(member string, size int32) *EBSVolume {
	return &EBSVolume{
		Name:       member + ".etcd-main." + testCluster,
		Zone:       aws.String("us-east-1" + member),
		SizeGB:     aws.Int32(size),
		VolumeType: aws.String("gp3"),
		Encrypted:  aws.Bool(true),
		Tags: map[string]string{
			"k8s.io/etcd/main":          member + "/a,b,c",
			"k8s.io/role/control-plane": "1",
			ClusterTag(testCluster):     "owned",
		},
	}
}

func volumeGraph(vols ...func() *EBSVolume) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		for _, v := range vols {
			engine.Add(g, v())
		}
		return g
	}
}

// allVolumes returns every volume of the fake, by the SDK, without filters.
func allVolumes(t *testing.T, c *Cloud) []ec2types.Volume {
	t.Helper()
	out, err := c.EC2.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{})
	if err != nil {
		t.Fatal(err)
	}
	return out.Volumes
}

func TestEBSVolumeConvergesWithOneDescribePerRun(t *testing.T) {
	c, srv := newTestCloud(t)
	var vols []func() *EBSVolume
	for _, m := range []string{"a", "b", "c", "d", "e"} {
		vols = append(vols, func() *EBSVolume { return etcdVolume(m, 20) })
	}
	build := volumeGraph(vols...)
	applied := enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, build))
	if n := len(applied.Changes); n != 5 {
		t.Errorf("the apply made %d changes, want 5 creates", n)
	}
	if n := len(allVolumes(t, c)); n != 5 {
		t.Errorf("%d volumes, want 5", n)
	}
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		srv.ResetCalls()
		if p := mustRun(t, c, target, build); !p.Empty() {
			t.Errorf("%s of a converged cluster plans changes", target)
		}
		if diff := cmp.Diff(map[string]int{"DescribeVolumes": 1}, srv.Calls()); diff != "" {
			t.Errorf("%s of 5 converged volumes: calls (-want +got):\n%s", target, diff)
		}
	}
}

func TestEBSVolumeChangesInPlace(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	v := func() *EBSVolume { vol := etcdVolume("a", 10); vol.VolumeType = aws.String("gp2"); return vol }
	mustRun(t, c, engine.Apply, volumeGraph(v))
	id := aws.ToString(allVolumes(t, c)[0].VolumeId)
	// Tags kubeup does not own (an operator's, one of them under k8s.io/), and one of its own managed set that
	// no task asks for.
	if _, err := c.EC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id},
		Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("db")},
			{Key: aws.String("k8s.io/cluster-autoscaler/enabled"), Value: aws.String("true")},
			{Key: aws.String("kubeup.dev/instance-group"), Value: aws.String("gone")}}}); err != nil {
		t.Fatal(err)
	}

	changed := func() *EBSVolume {
		vol := etcdVolume("a", 30)
		vol.Throughput = aws.Int32(250)
		delete(vol.Tags, "k8s.io/role/control-plane")
		vol.Tags["k8s.io/etcd/main"] = "a/a,b"
		return vol
	}
	plan := mustRun(t, c, engine.DryRun, volumeGraph(changed))
	if len(plan.Changes) != 1 {
		t.Fatalf("dry run: %d changes, want 1", len(plan.Changes))
	}
	var fields []string
	for _, f := range plan.Changes[0].Fields {
		fields = append(fields, f.Name)
	}
	if diff := cmp.Diff([]string{"SizeGB", "VolumeType", "Throughput", "Tags"}, fields); diff != "" {
		t.Errorf("changed fields (-want +got):\n%s", diff)
	}
	srv.ResetCalls()
	enginetest.ApplyThenNoChanges(t, ctx, c, freshRuns(c, volumeGraph(changed)))
	calls := mutatingCalls(srv.Calls())
	if diff := cmp.Diff(map[string]int{"ModifyVolume": 1, "CreateTags": 1, "DeleteTags": 1}, calls); diff != "" {
		t.Errorf("mutating calls (-want +got):\n%s", diff)
	}
	got := allVolumes(t, c)
	if len(got) != 1 || aws.ToString(got[0].VolumeId) != id {
		t.Fatalf("volumes %v, want only %s", got, id)
	}
	wantTags := map[string]string{
		"Name": "a.etcd-main." + testCluster, "k8s.io/etcd/main": "a/a,b", ClusterTag(testCluster): "owned", "team": "db",
		"k8s.io/cluster-autoscaler/enabled": "true",
	}
	if diff := cmp.Diff(wantTags, tagsOf(got[0].Tags)); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if aws.ToInt32(got[0].Size) != 30 || got[0].VolumeType != "gp3" || aws.ToInt32(got[0].Throughput) != 250 {
		t.Errorf("size %d type %s throughput %d, want 30 gp3 250", aws.ToInt32(got[0].Size), got[0].VolumeType, aws.ToInt32(got[0].Throughput))
	}
}

func TestEBSVolumeRefusesImpossibleChanges(t *testing.T) {
	c, srv := newTestCloud(t)
	mustRun(t, c, engine.Apply, volumeGraph(func() *EBSVolume { return etcdVolume("a", 20) }))
	for _, tc := range []struct {
		name   string
		change func(*EBSVolume)
		want   []string
	}{
		{"zone", func(v *EBSVolume) { v.Zone = aws.String("us-east-1b") }, []string{"field Zone", "us-east-1a", "us-east-1b", "keep zone us-east-1a"}},
		{"shrink", func(v *EBSVolume) { v.SizeGB = aws.Int32(10) }, []string{"field SizeGB", "cannot shrink from 20 GiB to 10 GiB", "20 or more"}},
		{"encryption", func(v *EBSVolume) { v.Encrypted = aws.Bool(false) }, []string{"field Encrypted", "from true to false", "keep encrypted: true"}},
		{"key", func(v *EBSVolume) { v.KMSKeyID = aws.String("arn:aws:kms:us-east-1:123456789012:key/other") }, []string{"field KMSKeyID", "key/other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.ResetCalls()
			_, err := runOnce(t, c, engine.Apply, volumeGraph(func() *EBSVolume { v := etcdVolume("a", 20); tc.change(v); return v }))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if m := mutatingCalls(srv.Calls()); len(m) > 0 {
				t.Errorf("mutating calls %v", m)
			}
		})
	}
}

// A run that crashed after its CreateVolume (the volume exists, the next run's list does not show it yet) is
// followed by a run that creates it again with the same client token: AWS answers with the same volume.
func TestEBSVolumeCreateAfterCrashMakesNoSecondVolume(t *testing.T) {
	c, srv := newTestCloud(t)
	if err := srv.SetFaults(fakeaws.Faults{VolumeInvisibleCalls: 1}); err != nil {
		t.Fatal(err)
	}
	build := volumeGraph(func() *EBSVolume { return etcdVolume("a", 20) })
	mustRun(t, c, engine.Apply, build) // creates; "crashes" (this run's outcome is forgotten)
	p := mustRun(t, c, engine.Apply, build)
	if len(p.Changes) != 1 || p.Changes[0].Action != engine.Create {
		t.Fatalf("second run: %v, want a create (the volume is not visible yet)", p.Changes)
	}
	if n := srv.Calls()["CreateVolume"]; n != 2 {
		t.Errorf("CreateVolume called %d times, want 2", n)
	}
	if p := mustRun(t, c, engine.Apply, build); !p.Empty() { // the volume is visible now
		t.Errorf("third run: %v, want no changes", p.Changes)
	}
	if vols := allVolumes(t, c); len(vols) != 1 {
		t.Fatalf("%d volumes after a create repeated with its client token, want 1", len(vols))
	}
}

// A run that crashed after its CreateVolume, followed by a run of a changed spec while the volume is not visible
// yet: the create's IdempotentParameterMismatch makes the task wait, and once the volume shows it is changed as
// the spec says. No second volume.
func TestEBSVolumeParameterMismatchOfAVolumeNotVisibleYet(t *testing.T) {
	c, srv := newTestCloud(t)
	if err := srv.SetFaults(fakeaws.Faults{VolumeInvisibleCalls: 2}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, c, engine.Apply, volumeGraph(func() *EBSVolume { return etcdVolume("a", 20) }))
	srv.ResetCalls()
	mustRun(t, c, engine.Apply, volumeGraph(func() *EBSVolume { return etcdVolume("a", 40) }))
	if diff := cmp.Diff(map[string]int{"CreateVolume": 1, "ModifyVolume": 1}, mutatingCalls(srv.Calls())); diff != "" {
		t.Errorf("mutating calls (-want +got):\n%s", diff)
	}
	vols := allVolumes(t, c)
	if len(vols) != 1 || aws.ToInt32(vols[0].Size) != 40 {
		t.Fatalf("volumes %+v, want one of 40 GiB", vols)
	}
}

// The client token of a volume of an earlier life of the cluster (deleted since), used again with another spec:
// once the volume is surely gone (maxMismatchReads looks), the next token makes the volume.
func TestEBSVolumeParameterMismatchOfAGoneVolumeTakesTheNextToken(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	mustRun(t, c, engine.Apply, volumeGraph(func() *EBSVolume { return etcdVolume("a", 20) }))
	old := allVolumes(t, c)[0].VolumeId
	if _, err := c.EC2.DeleteVolume(ctx, &ec2.DeleteVolumeInput{VolumeId: old}); err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	mustRun(t, c, engine.Apply, volumeGraph(func() *EBSVolume { return etcdVolume("a", 40) }))
	if n := srv.Calls()["CreateVolume"]; n != maxMismatchReads+1 {
		t.Errorf("CreateVolume called %d times, want %d (the old token until the volume is surely gone, then the next)", n, maxMismatchReads+1)
	}
	vols := allVolumes(t, c)
	if len(vols) != 1 || aws.ToInt32(vols[0].Size) != 40 || aws.ToString(vols[0].VolumeId) == aws.ToString(old) {
		t.Fatalf("volumes %+v, want one new one of 40 GiB", vols)
	}
}

// judgeToken decides by the resource a client token was answered with, never by this machine's clock: an old
// resource that still exists and is the cluster's is reused; a deleted or disowned one is stale.
func TestJudgeToken(t *testing.T) {
	server := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	name := "a.etcd-main." + testCluster
	ours := map[string]string{"Name": name, ClusterTag(testCluster): "owned"}
	for _, tc := range []struct {
		name string
		ev   tokenEvidence
		want tokenVerdict
	}{
		{"made a second ago", tokenEvidence{State: "creating", Created: server.Add(-time.Second), ServerTime: server}, tokenOurs},
		{"made 'in the future' (the server's clocks differ a little)", tokenEvidence{State: "creating", Created: server.Add(time.Minute), ServerTime: server}, tokenOurs},
		{"deleting in the answer", tokenEvidence{State: "deleting", Created: server.Add(-time.Second), ServerTime: server}, tokenStale},
		{"deleted in the answer", tokenEvidence{State: "deleted", Created: server.Add(-48 * time.Hour), ServerTime: server}, tokenStale},
		{"made long ago, not read yet", tokenEvidence{State: "available", Created: server.Add(-48 * time.Hour), ServerTime: server}, tokenRead},
		{"no server time, not read yet", tokenEvidence{State: "creating", Created: server}, tokenRead},
		{"made long ago, still the cluster's", tokenEvidence{State: "available", Created: server.Add(-48 * time.Hour), ServerTime: server,
			Read: &tokenReadResult{Found: true, State: "in-use", Tags: ours}}, tokenOurs},
		{"no server time, the cluster's", tokenEvidence{State: "creating", Created: server,
			Read: &tokenReadResult{Found: true, State: "available", Tags: ours}}, tokenOurs},
		{"made long ago, gone", tokenEvidence{State: "available", Created: server.Add(-48 * time.Hour), ServerTime: server,
			Read: &tokenReadResult{}}, tokenStale},
		{"made long ago, deleting now", tokenEvidence{State: "available", Created: server.Add(-48 * time.Hour), ServerTime: server,
			Read: &tokenReadResult{Found: true, State: "deleting", Tags: ours}}, tokenStale},
		{"made long ago, deleted now", tokenEvidence{State: "available", Created: server.Add(-48 * time.Hour), ServerTime: server,
			Read: &tokenReadResult{Found: true, State: "deleted", Tags: ours}}, tokenStale},
		{"made long ago, disowned", tokenEvidence{State: "available", Created: server.Add(-48 * time.Hour), ServerTime: server,
			Read: &tokenReadResult{Found: true, State: "available", Tags: map[string]string{"Name": name}}}, tokenStale},
		{"made long ago, another name", tokenEvidence{State: "available", Created: server.Add(-48 * time.Hour), ServerTime: server,
			Read: &tokenReadResult{Found: true, State: "available", Tags: map[string]string{"Name": "b", ClusterTag(testCluster): "owned"}}}, tokenStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeToken(tc.ev, testCluster, name); got != tc.want {
				t.Errorf("judgeToken = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEBSVolumeTwoOfOneNameIsAnError(t *testing.T) {
	c, _ := newTestCloud(t)
	for i := range 2 {
		_, err := c.EC2.CreateVolume(context.Background(), &ec2.CreateVolumeInput{
			AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(1), ClientToken: aws.String(fmt.Sprint("dup", i)),
			TagSpecifications: []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeVolume,
				map[string]string{"Name": "a.etcd-main." + testCluster, ClusterTag(testCluster): "owned"})},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := runOnce(t, c, engine.DryRun, volumeGraph(func() *EBSVolume { return etcdVolume("a", 20) }))
	if err == nil || !strings.Contains(err.Error(), "2 EBS volumes are named a.etcd-main."+testCluster) {
		t.Fatalf("error %v, want two volumes of one name named", err)
	}
}

func TestEBSVolumesConvergeUnderThrottling(t *testing.T) {
	c, srv := newTestCloud(t)
	if err := srv.SetFaults(fakeaws.Faults{ThrottleRate: 0.3, VolumeInvisibleCalls: 1, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	var vols []func() *EBSVolume
	for _, m := range []string{"a", "b", "c", "d", "e", "f"} {
		vols = append(vols, func() *EBSVolume { return etcdVolume(m, 20) })
	}
	build := volumeGraph(vols...)
	mustRun(t, c, engine.Apply, build)
	mustRun(t, c, engine.Apply, build) // a volume not visible yet is created again, with its token
	if err := srv.SetFaults(fakeaws.Faults{}); err != nil {
		t.Fatal(err)
	}
	if p := mustRun(t, c, engine.DryRun, build); !p.Empty() {
		t.Errorf("changes left: %v", p.Changes)
	}
	if n := len(allVolumes(t, c)); n != 6 {
		t.Errorf("%d volumes, want exactly 6", n)
	}
}
