package aws

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestRollingUpdateControlPlane is the acceptance of rolling-update on the AWS fake: after the machine
// type of the three control-plane groups changes (replace -f, update --yes), rolling-update lists their three
// instances as NeedsUpdate and the nodes' as up to date; --yes replaces them one at a time through their Auto
// Scaling groups, and the log shows the etcd quorum check (main and events) before each termination. A stand-in
// for protokube attaches each zone's free member volumes to the zone's control-plane instance, as protokube's
// claim does. The new instances run the new type, the nodes' instance is untouched, and a second listing finds
// nothing to do.
func TestRollingUpdateControlPlane(t *testing.T) {
	t.Parallel()
	a := newAccount(t, false)
	a.createCluster(cluster)
	a.mustKubeup("update", "cluster", cluster, "--yes")
	stop := a.playProtokube(t)
	defer stop()
	a.waitMembersAttached(t)

	if out := a.mustKubeup("rolling-update", "cluster", cluster, "--cloudonly"); !strings.Contains(out, "No machine of cluster "+cluster+" needs to be replaced") {
		t.Fatalf("rolling-update of a cluster just made lists machines to replace:\n%s", out)
	}
	before := a.instances(t)
	a.setControlPlaneMachineType(t, "m6i.large")
	a.mustKubeup("update", "cluster", cluster, "--yes")

	out := a.mustKubeup("rolling-update", "cluster", cluster, "--cloudonly")
	t.Logf("rolling-update:\n%s", out)
	for _, ig := range []string{"control-plane-a", "control-plane-b", "control-plane-c"} {
		if !regexp.MustCompile(`(?m)^` + ig + `\s+NeedsUpdate\s+1\s+1\s+1\s+1\s+1$`).MatchString(out) {
			t.Errorf("rolling-update does not list %s as NeedsUpdate 1, Ready 1, min/target/max 1", ig)
		}
	}
	if !regexp.MustCompile(`(?m)^nodes\s+Ready\s+0\s`).MatchString(out) {
		t.Errorf("rolling-update does not list the nodes as up to date")
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^(i-\S+)\s+control-plane-\S+\s+us-east-1[abc]\s+NeedsUpdate\s+true\s+launch template version 1 \(t3\.medium\), the group launches version 2$`).FindAllStringSubmatch(out, -1) {
		listed = append(listed, m[1])
	}
	order := slices.Clone(listed) // the order they are replaced in: control-plane-a, -b, -c
	slices.Sort(listed)
	if want := before.controlPlane; !slices.Equal(listed, want) {
		t.Errorf("instances listed as NeedsUpdate: %v, want the control plane's %v", listed, want)
	}
	if !strings.Contains(out, "Must specify --yes") {
		t.Errorf("the listing does not say that --yes replaces them")
	}
	if after := a.instances(t); !slices.Equal(after.all, before.all) {
		t.Fatalf("rolling-update without --yes changed the instances: %v -> %v", before.all, after.all)
	}

	stdout, stderr, err := e2e.Kubeup{T: t, Bin: kubeupBinary, Env: a.env}.Run("rolling-update", "cluster", cluster, "--cloudonly", "--yes", "--interval", "100ms")
	t.Logf("rolling-update --yes:\n%s\n%s", stdout, stderr)
	if err != nil {
		t.Fatalf("rolling-update --yes: %v", err)
	}
	// The log: for each old instance, the quorum checks of main and events (ok) come before its replacement, and
	// each replacement is done before the next instance's checks.
	lines := strings.Split(stderr, "\n")
	pos := func(re string) int {
		return slices.IndexFunc(lines, regexp.MustCompile(re).MatchString)
	}
	last := -1
	for _, id := range order {
		for _, ec := range []string{"main", "events"} {
			p := pos(`etcd quorum check.* instance=` + id + `.* etcdCluster=` + ec + ` members=3 quorum=2 .*ok=true basis=".*volume is attached to an in-service instance`)
			if p < 0 || p < last {
				t.Errorf("no quorum check of etcd-%s for %s after the former replacement (line %d, former %d)", ec, id, p, last)
			}
			last = max(last, p)
		}
		done := pos(`the replacement is ready and the cluster healthy.* instance=` + id)
		if done < last {
			t.Errorf("the replacement of %s is not logged done after its quorum checks (line %d, checks %d)", id, done, last)
		}
		last = done
	}
	after := a.instances(t)
	for _, id := range before.controlPlane {
		if slices.Contains(after.all, id) {
			t.Errorf("instance %s is still there", id)
		}
	}
	if len(after.controlPlane) != 3 || !slices.Equal(after.nodes, before.nodes) {
		t.Errorf("after: control plane %v (want 3 new), nodes %v (want %v)", after.controlPlane, after.nodes, before.nodes)
	}
	for _, id := range after.controlPlane {
		if typ := after.types[id]; typ != "m6i.large" {
			t.Errorf("replacement %s runs %s, want m6i.large", id, typ)
		}
	}
	if n := a.fake.Calls()["TerminateInstanceInAutoScalingGroup"]; n != 3 {
		t.Errorf("TerminateInstanceInAutoScalingGroup called %d times, want 3", n)
	}
	if out := a.mustKubeup("rolling-update", "cluster", cluster, "--cloudonly"); !strings.Contains(out, "No machine of cluster "+cluster+" needs to be replaced") {
		t.Errorf("after the rolling update, machines still need it:\n%s", out)
	}
}

// TestRollingUpdateStopsWithoutQuorum: with one etcd member's volume attached to no instance (its machine's
// protokube has not claimed it), rolling-update --yes refuses to take down a control-plane machine holding
// another member, saying that etcd would lose its quorum, and terminates nothing. With the stand-in for protokube
// stopped after the first replacement, the update waits for the member, then stops with the other two machines
// still serving.
func TestRollingUpdateStopsWithoutQuorum(t *testing.T) {
	t.Parallel()
	a := newAccount(t, false)
	a.createCluster(cluster)
	a.mustKubeup("update", "cluster", cluster, "--yes")
	stop := a.playProtokube(t)
	a.waitMembersAttached(t)
	a.setControlPlaneMachineType(t, "m6i.large")
	a.mustKubeup("update", "cluster", cluster, "--yes")
	stop()

	// One member of etcd-main down: its volume detached (from the last zone's instance).
	ctx := context.Background()
	vols := a.memberVolumes(t)
	var victim ec2types.Volume
	for _, v := range vols {
		if tag(v.Tags, "k8s.io/etcd/main") != "" && aws.ToString(v.AvailabilityZone) == zones[2] {
			victim = v
		}
	}
	if _, err := a.ec2.DetachVolume(ctx, &ec2.DetachVolumeInput{VolumeId: victim.VolumeId}); err != nil {
		t.Fatal(err)
	}
	before := a.instances(t)
	// The first replaced is the machine of the first control-plane group (control-plane-a, in the first zone):
	// groups in order, control plane first. Instance ids follow the order the groups were made in, which the
	// engine does not fix.
	first := before.byZone[zones[0]]
	stdout, stderr, err := e2e.Kubeup{T: t, Bin: kubeupBinary, Env: a.env}.Run("rolling-update", "cluster", cluster, "--cloudonly", "--yes", "--interval", "100ms")
	t.Logf("rolling-update --yes:\n%s\n%s", stdout, stderr)
	if err == nil {
		t.Fatal("rolling-update --yes succeeded with a member down")
	}
	if !strings.Contains(stderr, "etcd would lose its quorum") || !strings.Contains(stderr, "etcd-main: without "+first+" only 1 of its 3 members would be healthy") {
		t.Errorf("the error does not say that etcd-main would lose its quorum without %s", first)
	}
	if n := a.fake.Calls()["TerminateInstanceInAutoScalingGroup"]; n != 0 {
		t.Errorf("TerminateInstanceInAutoScalingGroup called %d times, want none", n)
	}

	// The member back; protokube's stand-in gone: the first replacement's members are never claimed again.
	if _, err := a.ec2.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: victim.VolumeId, InstanceId: aws.String(before.byZone[zones[2]]), Device: aws.String("/dev/xvdf")}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err = e2e.Kubeup{T: t, Bin: kubeupBinary, Env: a.env}.Run("rolling-update", "cluster", cluster, "--cloudonly", "--yes",
		"--interval", "100ms", "--validation-timeout", "2s")
	t.Logf("rolling-update --yes:\n%s\n%s", stdout, stderr)
	if err == nil {
		t.Fatal("rolling-update --yes succeeded while the replacement's members stayed unclaimed")
	}
	if !strings.Contains(stderr, "stopped: 0 of 3 machines replaced, and "+first+" (control-plane-") || !strings.Contains(stderr, "taken down, whose replacement is not confirmed") ||
		!strings.Contains(stderr, "etcd members not healthy yet") {
		t.Errorf("the error does not say it stopped at the first replacement, taken down, waiting for its members")
	}
	if n := a.fake.Calls()["TerminateInstanceInAutoScalingGroup"]; n != 1 {
		t.Errorf("TerminateInstanceInAutoScalingGroup called %d times, want 1: the update must stop at the first failure", n)
	}
	after := a.instances(t)
	for _, id := range before.controlPlane {
		if id != first && !slices.Contains(after.all, id) {
			t.Errorf("instance %s was taken down after the first replacement failed", id)
		}
	}
}

// setControlPlaneMachineType changes the machine type of the control-plane instance groups with replace -f.
func (a *account) setControlPlaneMachineType(t *testing.T, typ string) {
	t.Helper()
	spec := a.mustKubeup("get", "cluster", cluster, "-o", "yaml") + "---\n" + a.mustKubeup("get", "instancegroups", "--name", cluster, "-o", "yaml")
	docs := strings.Split(spec, "\n---\n")
	changed := 0
	for k, d := range docs {
		if strings.Contains(d, "kind: InstanceGroup") && strings.Contains(d, "role: ControlPlane") {
			d2 := regexp.MustCompile(`(?m)^  machineType: .*$`).ReplaceAllString(d, "  machineType: "+typ)
			if d2 == d {
				d2 = strings.Replace(d, "\nspec:\n", "\nspec:\n  machineType: "+typ+"\n", 1)
			}
			docs[k] = d2
			changed++
		}
	}
	if changed != 3 {
		t.Fatalf("found %d control-plane instance groups in the spec, want 3:\n%s", changed, spec)
	}
	file := t.TempDir() + "/spec.yaml"
	e2e.WriteFile(t, file, strings.Join(docs, "\n---\n"))
	a.mustKubeup("replace", "-f", file)
}

// groupInstances is what the fake's Auto Scaling groups hold: instance ids (sorted), the control plane's and the
// nodes', each instance's type, and the control plane's instance of each zone.
type groupInstances struct {
	all, controlPlane, nodes []string
	types                    map[string]string
	byZone                   map[string]string
}

func (a *account) instances(t *testing.T) groupInstances {
	t.Helper()
	gi, err := a.readInstances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return gi
}

func (a *account) readInstances(ctx context.Context) (groupInstances, error) {
	out, err := a.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		return groupInstances{}, err
	}
	gi := groupInstances{types: map[string]string{}, byZone: map[string]string{}}
	for _, g := range out.AutoScalingGroups {
		for _, i := range g.Instances {
			id := aws.ToString(i.InstanceId)
			gi.all = append(gi.all, id)
			gi.types[id] = aws.ToString(i.InstanceType)
			if strings.HasPrefix(aws.ToString(g.AutoScalingGroupName), "control-plane-") {
				gi.controlPlane = append(gi.controlPlane, id)
				if string(i.LifecycleState) == "InService" {
					gi.byZone[aws.ToString(i.AvailabilityZone)] = id
				}
			} else {
				gi.nodes = append(gi.nodes, id)
			}
		}
	}
	slices.Sort(gi.all)
	slices.Sort(gi.controlPlane)
	slices.Sort(gi.nodes)
	return gi, nil
}

func (a *account) memberVolumes(t *testing.T) []ec2types.Volume {
	t.Helper()
	out, err := a.ec2.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:kubernetes.io/cluster/" + cluster), Values: []string{"owned"}},
		{Name: aws.String("tag:k8s.io/role/control-plane"), Values: []string{"1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Volumes
}

func tag(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// playProtokube stands in for protokube's claim on the control-plane machines: every 50ms, each member volume
// attached to no instance is attached to the in-service control-plane instance of its zone (main under
// /dev/xvdf, events under /dev/xvdg). It returns a function that stops it.
func (a *account) playProtokube(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			a.claimFreeVolumes(ctx, t)
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func (a *account) claimFreeVolumes(ctx context.Context, t *testing.T) {
	vols, err := a.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:kubernetes.io/cluster/" + cluster), Values: []string{"owned"}},
		{Name: aws.String("tag:k8s.io/role/control-plane"), Values: []string{"1"}},
	}})
	if err != nil {
		return // the context ended
	}
	var byZone map[string]string
	for _, v := range vols.Volumes {
		if len(v.Attachments) > 0 {
			continue
		}
		if byZone == nil {
			gi, err := a.readInstances(ctx)
			if err != nil {
				return
			}
			byZone = gi.byZone
		}
		id, ok := byZone[aws.ToString(v.AvailabilityZone)]
		if !ok {
			continue
		}
		dev := "/dev/xvdg"
		if tag(v.Tags, "k8s.io/etcd/main") != "" {
			dev = "/dev/xvdf"
		}
		if _, err := a.ec2.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: v.VolumeId, InstanceId: aws.String(id), Device: aws.String(dev)}); err != nil && ctx.Err() == nil {
			t.Logf("the stand-in for protokube could not attach %s to %s: %v", aws.ToString(v.VolumeId), id, err)
		}
	}
}

// waitMembersAttached waits until the six member volumes are attached.
func (a *account) waitMembersAttached(t *testing.T) {
	t.Helper()
	e2e.WaitFor(t, 30*time.Second, "the six member volumes to be attached", func() (int, bool) {
		n := 0
		for _, v := range a.memberVolumes(t) {
			if len(v.Attachments) > 0 {
				n++
			}
		}
		return n, n == 6
	})
}
