package aws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/tasks/awstasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
	"kubeup.dev/kubeup/test/internal/storecheck"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

// The fault matrix of the aws pipeline: throttling share x 5xx share x eventual consistency x slow attach, each
// cell a fresh account in which the kubeup binary's `update cluster --yes` converges (re-run at most
// maxUpdateRuns times), protokube's volume provider (awstasks.Volumes) claims the member volumes for the
// cluster's instances under the same faults, a dry run (faults still on) has nothing to do, and the account holds
// exactly what the spec asks for, once, and the state store only whole objects.

// maxUpdateRuns bounds the `update --yes` runs a cell may take to converge: one run is expected; a run that fails
// under faults (a task out of retries) is run again, as an operator would.
const maxUpdateRuns = 3

// faults are the cell's faults of the fake: eventual consistency makes new volumes, security groups and launch
// templates invisible for 2 calls; slow attach keeps an attachment "attaching" for 2 polls. No latency.
func cellFaults(c e2e.FaultCell, seed uint64) fakeaws.Faults {
	f := fakeaws.Faults{ThrottleRate: c.PushedBack, ServerErrorRate: c.ServerErrors, Seed: seed}
	if c.Consistency {
		f.VolumeInvisibleCalls, f.GroupInvisibleCalls, f.TemplateInvisibleCalls = 2, 2, 2
	}
	if c.SlowAttach {
		f.AttachingPolls = 2
	}
	return f
}

// TestFaultMatrix runs every cell of the fault matrix (e2e.FaultMatrix), each in a fresh account of its own.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	e2e.FaultMatrix(t, "throttle", runCell)
}

func runCell(t *testing.T, cell e2e.FaultCell, seed uint64) {
	a := newAccount(t, false)
	a.createCluster(cluster)
	faults := cellFaults(cell, seed)
	if err := a.fake.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	k := e2e.Kubeup{T: t, Bin: kubeupBinary, Env: a.env}
	for run := 1; ; run++ {
		out, errOut, err := k.Run("update", "cluster", cluster, "--yes")
		if err == nil {
			break
		}
		if run == maxUpdateRuns {
			t.Fatalf("update --yes did not converge in %d runs; the last: %v\n%s%s", run, err, out, errOut)
		}
		t.Logf("update --yes, run %d: %v\n%s", run, err, errOut)
	}

	a.claimMemberVolumes(t)

	out, errOut, err := k.Run("update", "cluster", cluster)
	if err != nil || !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the dry run after: %v\n%s%s\nwant no changes", err, out, errOut)
	}

	if err := a.fake.SetFaults(fakeaws.Faults{}); err != nil {
		t.Fatal(err)
	}
	a.settle(faults.VolumeInvisibleCalls)
	a.checkNoDuplicates(t.Name())
	o := a.ownedSDK(cluster)
	slices.Sort(o.Volumes)
	slices.Sort(o.Templates)
	slices.Sort(o.Groups)
	slices.Sort(o.SecurityGroups)
	var igs []string
	for _, ig := range []string{"control-plane-a", "control-plane-b", "control-plane-c", "nodes"} {
		igs = append(igs, ig+"."+cluster)
	}
	if len(o.Volumes) != 6 || !slices.Equal(o.Templates, igs) || !slices.Equal(o.Groups, igs) || len(o.SecurityGroups) != 2 {
		t.Errorf("the account holds %+v; want 6 volumes, the templates and groups %v, 2 security groups", o, igs)
	}
	if got, want := a.clusterRecords(), []string{"api." + cluster + ". A", "api.internal." + cluster + ". A"}; !slices.Equal(got, want) {
		t.Errorf("the hosted zone's records of the cluster: %v, want %v", got, want)
	}
	a.checkStore(t, cluster)
}

// sdkConfig is an SDK configuration for the fake with the retries protokube's client has (awstasks.LoadConfig's
// awstasks.NewRetryer).
func (a *account) sdkConfig() aws.Config {
	return aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption},
		Region: region, Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""), BaseEndpoint: aws.String(a.url),
		Retryer: func() aws.Retryer { return awstasks.NewRetryer() },
	}
}

// claimant is one instance claiming volumes with protokube's provider, on a node root of its own where every
// volume of the cluster shows, once attached, as an NVMe device.
type claimant struct {
	id, zone     string
	controlPlane bool
	vols         *awstasks.Volumes
	devices      map[string]string // volume id -> the device Attach must return
}

// claimMemberVolumes is protokube's claim on every instance of the cluster at once, under the cell's faults:
// in each zone, the control-plane instance and a node instance both claim that zone's member volumes (the node as
// a stand-in for a second protokube racing for them). Each volume ends attached to one instance, whose Attach
// returned its device; the other claimant's Attach says it is held (volumetasks.HeldError). A second Attach by
// the winner returns the same device without another AttachVolume.
func (a *account) claimMemberVolumes(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	client := ec2.NewFromConfig(a.sdkConfig())
	start := time.Now()
	filter := map[string]string{"kubernetes.io/cluster/" + cluster: "owned"}

	// The test's own read, through the faults: with awstasks' retries.
	groups, err := autoscaling.NewFromConfig(a.sdkConfig()).DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	groupOf := map[string]string{}
	for _, g := range groups.AutoScalingGroups {
		for _, i := range g.Instances {
			groupOf[aws.ToString(i.InstanceId)] = aws.ToString(g.AutoScalingGroupName)
		}
	}
	var all []volumetasks.Volume
	lister := awstasks.NewVolumes(client, volumetasks.Holder{NodeID: "lister"}, zones[0], awstasks.VolumesOptions{})
	for poll := 0; len(all) < 6; poll++ { // protokube lists again next round while new volumes are invisible
		if poll == 20 {
			t.Fatalf("protokube's provider lists %d volumes of the cluster after %d polls, want 6", len(all), poll)
		}
		if all, err = lister.List(ctx, filter); err != nil && !retryable(err) {
			t.Fatal(err)
		}
	}
	var claimants []*claimant
	for _, i := range a.fake.Instances() {
		cp := strings.HasPrefix(groupOf[i.InstanceID], "control-plane-")
		if !cp && slices.ContainsFunc(claimants, func(c *claimant) bool { return c.zone == i.Zone && !c.controlPlane }) {
			continue // one node per zone
		}
		root := t.TempDir()
		// An instance's protokube has a client of its own.
		c := &claimant{id: i.InstanceID, zone: i.Zone, controlPlane: cp, devices: map[string]string{},
			vols: awstasks.NewVolumes(ec2.NewFromConfig(a.sdkConfig()), volumetasks.Holder{NodeID: i.InstanceID, InternalIP: i.PrivateIP}, i.Zone, awstasks.VolumesOptions{Root: root})}
		for n, v := range all {
			dev := filepath.Join(root, "dev", fmt.Sprintf("nvme%dn1", n+1))
			link := filepath.Join(root, "dev/disk/by-id", "nvme-Amazon_Elastic_Block_Store_"+strings.ReplaceAll(v.ID, "-", ""))
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dev, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(dev, link); err != nil {
				t.Fatal(err)
			}
			c.devices[v.ID] = dev
		}
		claimants = append(claimants, c)
	}
	if len(claimants) < 4 {
		t.Fatalf("instances %v in groups %v: want a control-plane instance in each zone and a node", a.fake.Instances(), groupOf)
	}

	type outcome struct {
		device string
		held   *volumetasks.HeldError
	}
	var mu sync.Mutex
	got := map[[2]string]outcome{} // [instance, volume]
	var wg sync.WaitGroup
	for _, c := range claimants {
		wg.Go(func() {
			for _, v := range all {
				if v.Zone != c.zone {
					continue
				}
				dev, err := attach(ctx, c.vols, v.ID)
				var held *volumetasks.HeldError
				if err != nil && !errors.As(err, &held) {
					t.Errorf("instance %s claiming %s: %v", c.id, v.ID, err)
					continue
				}
				mu.Lock()
				got[[2]string{c.id, v.ID}] = outcome{dev, held}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d instances claimed the volumes of their zones in %v", len(claimants), time.Since(start).Round(time.Millisecond))
	if t.Failed() {
		t.FailNow()
	}

	vols, err := client.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: volumeIDs(all)})
	if err != nil {
		t.Fatal(err)
	}
	for _, vol := range vols.Volumes {
		id := aws.ToString(vol.VolumeId)
		var holders []string
		for _, att := range vol.Attachments {
			if att.State != ec2types.VolumeAttachmentStateDetached {
				holders = append(holders, aws.ToString(att.InstanceId)+" "+string(att.State))
			}
		}
		if len(holders) != 1 {
			t.Errorf("volume %s is attached to %v, want one instance", id, holders)
			continue
		}
		holder, _, _ := strings.Cut(holders[0], " ")
		for _, c := range claimants {
			o, ok := got[[2]string{c.id, id}]
			switch {
			case !ok:
			case c.id == holder && o.device != c.devices[id]:
				t.Errorf("instance %s holds %s, and its Attach returned %q (held: %v), want %s", c.id, id, o.device, o.held, c.devices[id])
			case c.id != holder && (o.held == nil || o.held.Holder.NodeID != holder):
				t.Errorf("instance %s claiming %s held by %s: device %q, held error %v; want a HeldError naming %s", c.id, id, holder, o.device, o.held, holder)
			}
			if c.id != holder || !ok {
				continue
			}
			before := a.fake.Calls()["AttachVolume"]
			if dev, err := attach(ctx, c.vols, id); err != nil || dev != c.devices[id] {
				t.Errorf("instance %s claiming %s again: %q, %v, want %s", c.id, id, dev, err, c.devices[id])
			}
			if n := a.fake.Calls()["AttachVolume"] - before; n != 0 {
				t.Errorf("instance %s claiming %s, which it holds, called AttachVolume %d times", c.id, id, n)
			}
		}
	}
}

// attach is protokube's Attach of one volume, tried again while the provider says not ready or retryable, as its
// rounds do.
func attach(ctx context.Context, p volumetasks.Provider, id string) (string, error) {
	for try := 1; ; try++ {
		dev, err := p.Attach(ctx, id)
		if err == nil || !retryable(err) || try == 30 {
			return dev, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func retryable(err error) bool {
	c := engine.ClassOf(err)
	return c == engine.ClassNotReady || c == engine.ClassRetryable
}

func volumeIDs(vols []volumetasks.Volume) []string {
	var ids []string
	for _, v := range vols {
		ids = append(ids, v.ID)
	}
	return ids
}

// clusterRecords are the hosted zones' records that name the cluster, as "name type" lines, sorted.
func (a *account) clusterRecords() []string {
	a.t.Helper()
	ctx := context.Background()
	r53 := route53.NewFromConfig(a.sdkConfig())
	zs, err := r53.ListHostedZones(ctx, &route53.ListHostedZonesInput{})
	if err != nil {
		a.t.Fatal(err)
	}
	var out []string
	for _, z := range zs.HostedZones {
		p := route53.NewListResourceRecordSetsPaginator(r53, &route53.ListResourceRecordSetsInput{HostedZoneId: z.Id})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				a.t.Fatal(err)
			}
			for _, rr := range page.ResourceRecordSets {
				if strings.Contains(aws.ToString(rr.Name), cluster) {
					out = append(out, aws.ToString(rr.Name)+" "+string(rr.Type))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// storeObjects returns the state store's objects of cluster name (keys relative to its directory) and contents.
func (a *account) storeObjects(t *testing.T, name string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	client := s3.NewFromConfig(a.sdkConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	prefix := "clusters/" + name + "/"
	objs := map[string][]byte{}
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(data)) != aws.ToInt64(o.Size) {
				t.Errorf("s3://%s/%s: read %d bytes, listed as %d", bucket, aws.ToString(o.Key), len(data), aws.ToInt64(o.Size))
			}
			objs[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = data
		}
	}
	return objs
}

// checkStore fails the test unless every object of the cluster's state is whole, after a run that ended
// (storecheck.Problems); it logs
// the objects' names.
func (a *account) checkStore(t *testing.T, name string) {
	t.Helper()
	objs := a.storeObjects(t, name)
	t.Logf("the state of %s: %v", name, slices.Sorted(maps.Keys(objs)))
	for _, problem := range storecheck.Problems("s3://"+bucket+"/clusters/"+name, objs, true) {
		t.Error(problem)
	}
}
