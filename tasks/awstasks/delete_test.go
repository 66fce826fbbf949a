package awstasks

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
)

// makeZone makes the hosted zone example.com with a record set of each name ("name" is an A record, "name/TYPE"
// one of that type), and gives c (not used yet) its DNS.
func makeZone(t *testing.T, c *Cloud, names ...string) {
	t.Helper()
	ctx := context.Background()
	z, err := c.Route53.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("example.com"), CallerReference: aws.String("test")})
	if err != nil {
		t.Fatal(err)
	}
	var changes []r53types.Change
	for _, n := range names {
		name, rrtype, ok := strings.Cut(n, "/")
		if !ok {
			rrtype = "A"
		}
		value := map[string]string{"A": "192.0.2.1", "AAAA": "2001:db8::1", "TXT": `"v=spf1 -all"`, "CNAME": "elsewhere.example.org"}[rrtype]
		changes = append(changes, r53types.Change{Action: r53types.ChangeActionUpsert, ResourceRecordSet: &r53types.ResourceRecordSet{
			Name: aws.String(name), Type: r53types.RRType(rrtype), TTL: aws.Int64(60),
			ResourceRecords: []r53types.ResourceRecord{{Value: aws.String(value)}},
		}})
	}
	if _, err := c.Route53.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: z.HostedZone.Id, ChangeBatch: &r53types.ChangeBatch{Changes: changes},
	}); err != nil {
		t.Fatal(err)
	}
	c.dnsZone = "example.com"
}

func shortDeleteWaits(t *testing.T, wait time.Duration) {
	poll, w := deletePoll, deleteWait
	deletePoll, deleteWait = time.Millisecond, wait
	t.Cleanup(func() { deletePoll, deleteWait = poll, w })
}

func createVolume(t *testing.T, c *Cloud, tags map[string]string) string {
	t.Helper()
	out, err := c.EC2.CreateVolume(context.Background(), &ec2.CreateVolumeInput{
		AvailabilityZone: aws.String("us-east-1a"), Size: aws.Int32(1),
		TagSpecifications: []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeVolume, tags)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.VolumeId)
}

func TestDeleteOwnedDeletesWhatTheClusterOwnsOnly(t *testing.T) {
	shortDeleteWaits(t, time.Minute)
	c, srv := newTestCloud(t)
	ctx := context.Background()
	n := makeNetwork(t, c)
	// The names the cluster publishes, and records the user and other tools made under the cluster's name.
	published := []string{"api." + testCluster, "api.internal." + testCluster, "a.etcd-main.internal." + testCluster}
	makeZone(t, c, "api."+testCluster, "api."+testCluster+"/AAAA", "api.internal."+testCluster, "a.etcd-main.internal."+testCluster,
		testCluster, testCluster+"/TXT", "www."+testCluster, "shop."+testCluster+"/CNAME", "api.eu."+testCluster, "www.example.com")
	mustRun(t, c, engine.Apply, clusterGraph(n, defaultSpec()))
	other := createVolume(t, c, map[string]string{"Name": "a.etcd-main.other.example.com", ClusterTag("other.example.com"): "owned"})
	untagged := createVolume(t, c, map[string]string{"Name": "a.etcd-main." + testCluster})

	want := []string{
		"AutoScalingGroup/control-plane." + testCluster, "AutoScalingGroup/nodes." + testCluster,
		"LaunchTemplate/control-plane." + testCluster, "LaunchTemplate/nodes." + testCluster,
		"SecurityGroup/control-plane." + testCluster, "SecurityGroup/nodes." + testCluster,
		"EBSVolume/a.etcd-main." + testCluster, "EBSVolume/b.etcd-main." + testCluster, "EBSVolume/c.etcd-main." + testCluster,
		"DNSRecord/a.etcd-main.internal." + testCluster + "/A",
		"DNSRecord/api.internal." + testCluster + "/A", "DNSRecord/api." + testCluster + "/A", "DNSRecord/api." + testCluster + "/AAAA",
	}
	srv.ResetCalls()
	got, err := c.DeleteOwned(ctx, published, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("would delete (-want +got):\n%s", diff)
	}
	if m := mutatingCalls(srv.Calls()); len(m) > 0 {
		t.Errorf("a dry deletion made mutating calls %v", m)
	}

	got, err = c.DeleteOwned(ctx, published, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	var left []string
	for _, v := range allVolumes(t, c) {
		left = append(left, aws.ToString(v.VolumeId))
	}
	if diff := cmp.Diff([]string{other, untagged}, left, cmpSorted); diff != "" {
		t.Errorf("volumes left (-want +got):\n%s", diff)
	}
	records, err := c.DNSProvider().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rs := range records {
		names = append(names, rs.Name+"/"+rs.Type)
	}
	if diff := cmp.Diff([]string{testCluster + "/A", testCluster + "/TXT", "api.eu." + testCluster + "/A",
		"www." + testCluster + "/A", "shop." + testCluster + "/CNAME", "www.example.com/A"}, names, cmpSorted); diff != "" {
		t.Errorf("records left (-want +got):\n%s", diff)
	}
	if again, err := c.DeleteOwned(ctx, published, false); err != nil || len(again) > 0 {
		t.Errorf("after the deletion: %v, %v, want nothing left", again, err)
	}
	// The user's network stays.
	validate := engine.WithLifecycle(engine.ExistsAndValidates)
	if _, err := runOnce(t, c, engine.DryRun, func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		v := engine.Add(g, &VPC{ID: n.vpc}, validate)
		for _, id := range n.subnets {
			engine.Add(g, &Subnet{ID: id, VPC: v}, validate)
		}
		return g
	}); err != nil {
		t.Errorf("the user's network after the deletion: %v", err)
	}
}

var cmpSorted = cmp.Transformer("sorted", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func TestDeleteOwnedVolumeAttachedElsewhere(t *testing.T) {
	shortDeleteWaits(t, 20*time.Millisecond)
	c, _ := newTestCloud(t)
	ctx := context.Background()
	n := makeNetwork(t, c)
	id := createVolume(t, c, map[string]string{"Name": "a.etcd-main." + testCluster, ClusterTag(testCluster): "owned"})
	im, err := c.image(ctx, "debian-12-amd64")
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.EC2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: im.ImageId, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		InstanceType: "t3.small", SubnetId: aws.String(n.subnets[0])})
	if err != nil {
		t.Fatal(err)
	}
	inst := aws.ToString(run.Instances[0].InstanceId)
	if _, err := c.EC2.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(id), InstanceId: aws.String(inst),
		Device: aws.String("/dev/xvdf")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteOwned(ctx, nil, true)
	if err == nil || !strings.Contains(err.Error(), "still attached to instance "+inst) {
		t.Errorf("err = %v, want the volume's instance named", err)
	}
	if n := len(allVolumes(t, c)); n != 1 {
		t.Errorf("%d volumes, want the attached one kept", n)
	}
}

// What is gone already (deleted by an earlier, interrupted deletion, or by hand) is no error: each kind is known
// gone by its exact error code, or for an Auto Scaling group (whose "not found" is a ValidationError) by
// DescribeAutoScalingGroups.
func TestDeleteOfWhatIsGoneAlready(t *testing.T) {
	shortDeleteWaits(t, time.Minute)
	c, srv := newTestCloud(t)
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	if err := c.deleteAutoScalingGroup(ctx, deadline, "nodes."+testCluster); err != nil {
		t.Errorf("an Auto Scaling group that is gone: %v", err)
	}
	if err := c.deleteSecurityGroup(ctx, deadline, ec2types.SecurityGroup{GroupId: aws.String("sg-0123456789abcdef0"),
		GroupName: aws.String("nodes." + testCluster)}); err != nil {
		t.Errorf("a security group that is gone: %v", err)
	}
	if err := c.deleteVolume(ctx, deadline, "a.etcd-main."+testCluster, ec2types.Volume{VolumeId: aws.String("vol-0123456789abcdef0")}); err != nil {
		t.Errorf("a volume that is gone: %v", err)
	}
	if n := srv.Calls()["DeleteVolume"]; n != 0 {
		t.Errorf("DeleteVolume called %d times for a volume that is gone, want 0", n)
	}
}

// TestPollSaysWhatItWaitsFor: a wait that lasts says, as a warning at every deleteReport, what it waits for and
// the last error, instead of looking hung.
func TestPollSaysWhatItWaitsFor(t *testing.T) {
	var logs strings.Builder
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	p, r := deletePoll, deleteReport
	deletePoll, deleteReport = time.Millisecond, 5*time.Millisecond
	t.Cleanup(func() { deletePoll, deleteReport = p, r })

	calls := 0
	err := poll(context.Background(), time.Now().Add(50*time.Millisecond), "deleting security group sg-1", func() (bool, error) {
		calls++
		return false, engine.NotReady(errors.New("DependencyViolation: a rule of sg-2 uses it"))
	})
	if err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Errorf("poll: %v", err)
	}
	if !strings.Contains(logs.String(), `msg="still waiting" for="deleting security group sg-1"`) || !strings.Contains(logs.String(), "a rule of sg-2 uses it") {
		t.Errorf("logs:\n%s", logs.String())
	}
}

// TestDeleteOwnedTerminatesInstancesOutsideItsGroups: an instance that carries the cluster's ownership tag but
// is in none of its Auto Scaling groups (launched by hand from a group's template) is listed by the dry deletion
// and terminated by the deletion; an instance without the tag is left running. (Such instances were left.)
func TestDeleteOwnedTerminatesInstancesOutsideItsGroups(t *testing.T) {
	shortDeleteWaits(t, time.Minute)
	c, _ := newTestCloud(t)
	ctx := context.Background()
	n := makeNetwork(t, c)
	mustRun(t, c, engine.Apply, clusterGraph(n, defaultSpec()))
	launch := func(tags map[string]string) string {
		t.Helper()
		in := &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(n.subnets[0]),
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("nodes." + testCluster)}}
		if tags != nil {
			in.LaunchTemplate = nil
			im, err := c.image(ctx, "debian-12-amd64")
			if err != nil {
				t.Fatal(err)
			}
			in.ImageId, in.InstanceType = im.ImageId, "t3.small"
			in.TagSpecifications = []ec2types.TagSpecification{tagSpec(ec2types.ResourceTypeInstance, tags)}
		}
		out, err := c.EC2.RunInstances(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Instances[0].InstanceId)
	}
	stray := launch(nil) // the template's instance tags: the cluster's ownership tag
	theirs := launch(map[string]string{"Name": "someone-elses"})

	listed, err := c.DeleteOwned(ctx, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(listed, "Instance/"+stray) || slices.Contains(listed, "Instance/"+theirs) {
		t.Errorf("the dry deletion lists %v: want Instance/%s, and not Instance/%s", listed, stray, theirs)
	}
	for _, k := range listed {
		if strings.HasPrefix(k, "Instance/") && k != "Instance/"+stray {
			t.Errorf("the dry deletion lists %s: an instance of the cluster's Auto Scaling groups goes with its group", k)
		}
	}
	deleted, err := c.DeleteOwned(ctx, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(deleted, "Instance/"+stray) {
		t.Errorf("deleted %v: want Instance/%s", deleted, stray)
	}
	out, err := c.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{stray, theirs}})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]ec2types.InstanceStateName{}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			states[aws.ToString(i.InstanceId)] = i.State.Name
		}
	}
	if states[stray] != ec2types.InstanceStateNameTerminated || states[theirs] != ec2types.InstanceStateNameRunning {
		t.Errorf("after the deletion: %s %s, %s %s; want the cluster's terminated, the other running", stray, states[stray], theirs, states[theirs])
	}
}
