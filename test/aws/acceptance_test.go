package aws

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"kubeup.dev/kubeup/internal/fakeaws"
)

// TestCreateUpdateNoChangesDelete is the acceptance, in order: create, update --yes (6 volumes, the launch
// templates and groups of the 4 instance groups, the API's records, as the AWS CLI sees them), update again with
// no change, no mutating call and at most one Describe per resource type, then delete, which leaves nothing
// tagged for the cluster and keeps the VPC and subnets.
func TestCreateUpdateNoChangesDelete(t *testing.T) {
	t.Parallel()
	a := newAccount(t, true)
	a.createCluster(cluster)
	out := a.mustKubeup("update", "cluster", cluster, "--yes")
	t.Logf("update --yes:\n%s", out)

	o := a.owned(cluster)
	if len(o.Volumes) != 6 {
		t.Errorf("volumes tagged kubernetes.io/cluster/%s=owned: %v, want 6", cluster, o.Volumes)
	}
	igs := []string{"control-plane-a", "control-plane-b", "control-plane-c", "nodes"}
	var want []string
	for _, ig := range igs {
		want = append(want, ig+"."+cluster)
	}
	slices.Sort(o.Templates)
	slices.Sort(o.Groups)
	if !slices.Equal(o.Templates, want) || !slices.Equal(o.Groups, want) {
		t.Errorf("launch templates %v and Auto Scaling groups %v, want %v each", o.Templates, o.Groups, want)
	}
	recs := strings.Join(a.records(), "\n")
	for _, name := range []string{"api." + cluster + ". A", "api.internal." + cluster + ". A"} {
		if !strings.Contains(recs, name) {
			t.Errorf("no record %q in the hosted zone:\n%s", name, recs)
		}
	}

	// Again: nothing to do, and nothing changed to find it out.
	a.fake.ResetCalls()
	out = a.mustKubeup("update", "cluster", cluster)
	if !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("second update:\n%s\nwant \"No changes need to be applied\"", out)
	}
	for op, n := range a.fake.Calls() {
		if fakeaws.Mutating(op) {
			t.Errorf("the update that had nothing to do called %s %d times", op, n)
		}
		if strings.HasPrefix(op, "Describe") && n > 1 {
			t.Errorf("the update that had nothing to do called %s %d times, want at most once per resource type", op, n)
		}
	}
	t.Logf("calls of an update with nothing to do: %v", a.fake.Calls())

	out = a.mustKubeup("delete", "cluster", cluster, "--yes")
	t.Logf("delete --yes:\n%s", out)
	if o := a.owned(cluster); len(o.Volumes)+len(o.Templates)+len(o.Groups)+len(o.SecurityGroups) != 0 {
		t.Errorf("left tagged for %s after delete: %+v", cluster, o)
	}
	recs = strings.Join(a.records(), "\n")
	if strings.Contains(recs, cluster) {
		t.Errorf("records of %s left after delete:\n%s", cluster, recs)
	}
	var vpcs struct{ Vpcs []struct{ VpcId string } }
	a.awsJSON(&vpcs, "ec2", "describe-vpcs", "--vpc-ids", a.vpc)
	var subnets struct{ Subnets []struct{ SubnetId string } }
	a.awsJSON(&subnets, append([]string{"ec2", "describe-subnets", "--subnet-ids"}, a.subns...)...)
	if len(vpcs.Vpcs) != 1 || len(subnets.Subnets) != 3 {
		t.Errorf("after delete: VPCs %v, subnets %v; want the user's VPC and 3 subnets kept", vpcs.Vpcs, subnets.Subnets)
	}
}

// TestUpdateConvergesThroughThrottling: with 30% of calls throttled, new volumes invisible for a while and
// attachments slow, update --yes still converges, with exactly 6 volumes.
func TestUpdateConvergesThroughThrottling(t *testing.T) {
	t.Parallel()
	a := newAccount(t, false)
	a.createCluster(cluster)
	const invisible = 3
	if err := a.fake.SetFaults(fakeaws.Faults{ThrottleRate: 0.3, VolumeInvisibleCalls: invisible, AttachingPolls: 2, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	out := a.mustKubeup("update", "cluster", cluster, "--yes")
	t.Logf("update --yes:\n%s", out)
	throttled := a.fake.Calls()
	if err := a.fake.SetFaults(fakeaws.Faults{}); err != nil {
		t.Fatal(err)
	}
	a.settle(invisible)
	a.checkNoDuplicates("after an update through throttling")
	o := a.ownedSDK(cluster)
	if len(o.Volumes) != 6 || len(o.Templates) != 4 || len(o.Groups) != 4 || len(o.SecurityGroups) != 2 {
		t.Errorf("after an update through throttling: %+v, want 6 volumes, 4 templates, 4 groups, 2 security groups", o)
	}
	if out := a.mustKubeup("update", "cluster", cluster); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the update after:\n%s\nwant no changes", out)
	}
	t.Logf("calls, throttled included: %v", throttled)
}

// TestUpToDateOnlyOnceTheCloudShowsIt: with new volumes missing from DescribeVolumes for a while, update --yes
// says the cluster is up to date only once it is: the dry run right after, its faults still on, plans nothing.
// (It said so at once, and the next run planned the volumes it did not see yet again.)
func TestUpToDateOnlyOnceTheCloudShowsIt(t *testing.T) {
	t.Parallel()
	a := newAccount(t, false)
	a.createCluster(cluster)
	if err := a.fake.SetFaults(fakeaws.Faults{VolumeInvisibleCalls: 3}); err != nil {
		t.Fatal(err)
	}
	out := a.mustKubeup("update", "cluster", cluster, "--yes")
	if !strings.Contains(out, "Cluster is up to date") {
		t.Fatalf("update --yes:\n%s\nwant it to say the cluster is up to date", out)
	}
	if out := a.mustKubeup("update", "cluster", cluster); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the update right after one that said the cluster is up to date:\n%s\nwant no changes", out)
	}
}

// TestKilledUpdatesNeverDuplicate kills `kubeup update cluster --yes` with SIGKILL at random points, 20 times,
// running it again each time: the cloud never holds a second volume, template or group of one name.
func TestKilledUpdatesNeverDuplicate(t *testing.T) {
	t.Parallel()
	// A little latency, so that an update lasts long enough for the kills to land inside it; new volumes
	// invisible for a while, so that a killed create is found again only by its client token.
	faults := fakeaws.Faults{LatencyMillis: 5, VolumeInvisibleCalls: 2}
	// How long a whole update takes here, measured in another account, spreads the kills over it.
	probe := newAccount(t, false)
	probe.createCluster(cluster)
	if err := probe.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	probe.mustKubeup("update", "cluster", cluster, "--yes")
	whole := time.Since(start)

	a := newAccount(t, false)
	a.createCluster(cluster)
	if err := a.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(12, 34))
	for i := range 20 {
		cmd := exec.Command(a.bin, "update", "cluster", cluster, "--yes")
		cmd.Env = a.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(whole)))
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		t.Logf("run %d: killed after %v (%v)", i, delay.Round(time.Millisecond), err)
		a.settle(faults.VolumeInvisibleCalls) // a duplicate just made would hide in the window
		a.checkNoDuplicates(fmt.Sprintf("after kill %d", i))
	}
	a.mustKubeup("update", "cluster", cluster, "--yes")
	a.settle(faults.VolumeInvisibleCalls)
	a.checkNoDuplicates("after the last update")
	o := a.ownedSDK(cluster)
	if len(o.Volumes) != 6 || len(o.Templates) != 4 || len(o.Groups) != 4 || len(o.SecurityGroups) != 2 {
		t.Errorf("after the last update: %+v, want 6 volumes, 4 templates, 4 groups, 2 security groups", o)
	}
}

// settle lets the fake's eventual consistency end: a new volume is left out of the next n DescribeVolumes
// answers, however long ago it was made (the fake counts calls, not time).
func (a *account) settle(n int) {
	a.t.Helper()
	for range n {
		if _, err := a.ec2.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{}); err != nil {
			a.t.Fatal(err)
		}
	}
}

// checkNoDuplicates fails the test when two volumes, templates, groups or security groups of the cluster carry
// one name (the fake refuses two templates, groups or security groups of one name: this also catches a fake that
// would not).
func (a *account) checkNoDuplicates(when string) {
	a.t.Helper()
	o := a.ownedSDK(cluster)
	for what, names := range map[string][]string{"volume": o.Volumes, "launch template": o.Templates, "Auto Scaling group": o.Groups, "security group": o.SecurityGroups} {
		s := slices.Clone(names)
		slices.Sort(s)
		if c := slices.Compact(s); len(c) != len(names) {
			a.t.Errorf("%s: a %s twice: %v", when, what, names)
		}
	}
}
