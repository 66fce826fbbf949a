package awstasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// ec2Fixture is a fake AWS with a VPC, a subnet per zone and instances, and an EC2 client of it.
type ec2Fixture struct {
	s      *fakeaws.Server
	cfg    aws.Config
	client *ec2.Client
}

func newEC2Fixture(t *testing.T) *ec2Fixture {
	t.Helper()
	s, cfg := startFake(t)
	return &ec2Fixture{s: s, cfg: cfg, client: ec2.NewFromConfig(cfg)}
}

// instance launches an instance in zone (a subnet of its own) and returns it as a claim names it.
func (f *ec2Fixture) instance(t *testing.T, zone string) volumetasks.Holder {
	t.Helper()
	ctx := context.Background()
	vpc, err := f.client.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	n := len(f.s.Instances())
	sn, err := f.client.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(zone), CidrBlock: aws.String(fmt.Sprintf("10.0.%d.0/24", n))})
	if err != nil {
		t.Fatal(err)
	}
	im, err := f.client.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Images) == 0 {
		t.Fatal("DescribeImages: no image")
	}
	out, err := f.client.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: im.Images[0].ImageId, SubnetId: sn.Subnet.SubnetId, MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	i := out.Instances[0]
	return volumetasks.Holder{NodeID: aws.ToString(i.InstanceId), InternalIP: aws.ToString(i.PrivateIpAddress), ExternalIP: aws.ToString(i.PublicIpAddress)}
}

// volume creates a 1 GiB volume in zone with tags.
func (f *ec2Fixture) volume(t *testing.T, zone string, tags map[string]string) string {
	t.Helper()
	in := &ec2.CreateVolumeInput{AvailabilityZone: aws.String(zone), Size: aws.Int32(1)}
	if len(tags) > 0 {
		spec := types.TagSpecification{ResourceType: types.ResourceTypeVolume}
		for k, v := range tags {
			spec.Tags = append(spec.Tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		in.TagSpecifications = []types.TagSpecification{spec}
	}
	out, err := f.client.CreateVolume(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.VolumeId)
}

// provider returns the Volumes of instance me in zone, with a root of its own and short polls.
func (f *ec2Fixture) provider(t *testing.T, me volumetasks.Holder, zone string) *Volumes {
	t.Helper()
	v := NewVolumes(f.client, me, zone, VolumesOptions{Root: t.TempDir()})
	v.pollFirst, v.pollMax = time.Millisecond, 5*time.Millisecond
	return v
}

// nvme makes the NVMe link of volume id under v's root, to a file standing for the device, and returns the file.
func nvme(t *testing.T, v *Volumes, id string) string {
	t.Helper()
	dev := filepath.Join(v.root, "dev", "nvme-"+id)
	link := filepath.Join(v.root, nvmeLink(id))
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
	return dev
}

const zoneA, zoneB = "us-east-1a", "us-east-1b"

func TestVolumesList(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me, other := f.instance(t, zoneA), f.instance(t, zoneA)
	owned := map[string]string{"kubernetes.io/cluster/c": "owned", "k8s.io/role/control-plane": "1", "k8s.io/etcd/main": "a/a"}
	v1 := f.volume(t, zoneA, owned)
	v2 := f.volume(t, zoneA, owned)
	v3 := f.volume(t, zoneB, owned)                                                                             // another zone: listed, never attached here
	f.volume(t, zoneA, map[string]string{"kubernetes.io/cluster/c": "owned"})                                   // not the control plane's
	f.volume(t, zoneA, map[string]string{"kubernetes.io/cluster/d": "owned", "k8s.io/role/control-plane": "1"}) // another cluster
	if _, err := f.client.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(v2), InstanceId: aws.String(other.NodeID), Device: aws.String("/dev/xvdf")}); err != nil {
		t.Fatal(err)
	}
	p := f.provider(t, me, zoneA)
	got, err := p.List(ctx, map[string]string{"kubernetes.io/cluster/c": "owned", "k8s.io/role/control-plane": ""})
	if err != nil {
		t.Fatal(err)
	}
	want := []volumetasks.Volume{
		{ID: v1, Zone: zoneA, Tags: owned},
		{ID: v2, Zone: zoneA, Tags: owned, Holder: &other},
		{ID: v3, Zone: zoneB, Tags: owned},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if other.InternalIP == "" || other.ExternalIP == "" {
		t.Errorf("the fake's instance has no addresses: %+v", other)
	}
}

// TestVolumesAttachedReadsTheList: after a List, the Attached of each listed volume (the Finds of a protokube
// round) answers from what List read, with no DescribeVolumes of its own, once; a second Attached of the same
// volume (a retried Find), one of a volume List did not read, and any after NewRun or an Attach ask EC2.
func TestVolumesAttachedReadsTheList(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me := f.instance(t, zoneA)
	tags := map[string]string{"kubernetes.io/cluster/c": "owned"}
	mine, free, unlisted := f.volume(t, zoneA, tags), f.volume(t, zoneA, tags), f.volume(t, zoneA, nil)
	p := f.provider(t, me, zoneA)
	dev := nvme(t, p, mine)
	if _, err := p.Attach(ctx, mine); err != nil {
		t.Fatal(err)
	}
	type step struct {
		do       func() (string, error)
		want     string
		describe int // DescribeVolumes calls the step makes
	}
	attached := func(id string) func() (string, error) { return func() (string, error) { return p.Attached(ctx, id) } }
	list := func() (string, error) { _, err := p.List(ctx, tags); return "", err }
	newRun := func() (string, error) { p.NewRun(); return "", nil }
	for i, s := range []step{
		{do: list, describe: 1},
		{do: attached(mine), want: dev},
		{do: attached(free)},
		{do: attached(mine), want: dev, describe: 1}, // taken already: asks EC2
		{do: attached(unlisted), describe: 1},
		{do: list, describe: 1},
		{do: newRun},
		{do: attached(mine), want: dev, describe: 1},
		{do: list, describe: 1},
		{do: func() (string, error) { return p.Attach(ctx, mine) }, want: dev, describe: 2}, // its own read, and the wait's
		{do: attached(mine), want: dev, describe: 1},                                        // Attach dropped the listed one
	} {
		f.s.ResetCalls()
		got, err := s.do()
		if err != nil || got != s.want {
			t.Errorf("step %d = %q, %v, want %q", i, got, err, s.want)
		}
		if n := f.s.Calls()["DescribeVolumes"]; n != s.describe {
			t.Errorf("step %d called DescribeVolumes %d times, want %d", i, n, s.describe)
		}
	}
}

func TestVolumesAttach(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me := f.instance(t, zoneA)
	p := f.provider(t, me, zoneA)
	v1, v2, v3 := f.volume(t, zoneA, nil), f.volume(t, zoneA, nil), f.volume(t, zoneA, nil)

	t.Run("an NVMe instance: the by-id link, resolved", func(t *testing.T) {
		dev := nvme(t, p, v1)
		if got, err := p.Attached(ctx, v1); err != nil || got != "" {
			t.Fatalf("Attached before = %q, %v, want nothing", got, err)
		}
		got, err := p.Attach(ctx, v1)
		if err != nil || got != dev {
			t.Fatalf("Attach = %q, %v, want %s", got, err, dev)
		}
		if got, err := p.Attached(ctx, v1); err != nil || got != dev {
			t.Errorf("Attached = %q, %v, want %s", got, err, dev)
		}
		f.s.ResetCalls()
		if got, err := p.Attach(ctx, v1); err != nil || got != dev {
			t.Errorf("Attach again = %q, %v, want %s", got, err, dev)
		}
		if n := f.s.Calls()["AttachVolume"]; n != 0 {
			t.Errorf("Attach of an attached volume called AttachVolume %d times", n)
		}
	})
	t.Run("a Xen instance: the next free device name, until it appears", func(t *testing.T) {
		_, err := p.Attach(ctx, v2)
		if err == nil || engine.ClassOf(err) != engine.ClassNotReady || !strings.Contains(err.Error(), "/dev/xvdg") {
			t.Fatalf("Attach before the device appears = %v, want not ready, naming /dev/xvdg (xvdf is v1's)", err)
		}
		if got, err := p.Attached(ctx, v2); engine.ClassOf(err) != engine.ClassNotReady {
			t.Fatalf("Attached before the device appears = %q, %v, want not ready", got, err)
		}
		dev := filepath.Join(p.root, "dev", "xvdg")
		if err := os.WriteFile(dev, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := p.Attached(ctx, v2); err != nil || got != dev {
			t.Errorf("Attached = %q, %v, want %s", got, err, dev)
		}
	})
	t.Run("a name taken meanwhile: the next one", func(t *testing.T) {
		// Another attachment takes /dev/xvdh between the provider's DescribeInstances and its AttachVolume.
		other := f.volume(t, zoneA, nil)
		var once sync.Once
		racing := ec2.NewFromConfig(f.cfg, func(o *ec2.Options) {
			o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
				return st.Initialize.Add(middleware.InitializeMiddlewareFunc("race", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if _, ok := in.Parameters.(*ec2.AttachVolumeInput); ok {
						once.Do(func() {
							_, err := f.client.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(other), InstanceId: aws.String(me.NodeID), Device: aws.String("/dev/xvdh")})
							if err != nil {
								t.Error(err)
							}
						})
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
			})
		})
		rp := NewVolumes(racing, me, zoneA, VolumesOptions{Root: p.root})
		rp.pollFirst = time.Millisecond
		dev := nvme(t, rp, v3)
		f.s.ResetCalls()
		if got, err := rp.Attach(ctx, v3); err != nil || got != dev {
			t.Fatalf("Attach = %q, %v", got, err)
		}
		if n := f.s.Calls()["AttachVolume"]; n != 3 {
			t.Errorf("AttachVolume called %d times, want 3 (the other's, xvdh refused, xvdi)", n)
		}
		vol, err := p.describe(ctx, v3, "")
		if err != nil || aws.ToString(vol.Attachments[0].Device) != "/dev/xvdi" {
			t.Errorf("v3 is attached as %v (%v), want /dev/xvdi", vol.Attachments, err)
		}
	})
	t.Run("another zone's volume", func(t *testing.T) {
		_, err := p.Attach(ctx, f.volume(t, zoneB, nil))
		if err == nil || engine.ClassOf(err) != engine.ClassTerminal || !strings.Contains(err.Error(), "zone us-east-1b") {
			t.Errorf("Attach = %v, want a terminal error naming the zones", err)
		}
	})
}

func TestVolumesAttachWaitsForAttached(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me := f.instance(t, zoneA)
	p := f.provider(t, me, zoneA)
	id := f.volume(t, zoneA, nil)
	dev := nvme(t, p, id)
	if err := f.s.SetFaults(fakeaws.Faults{AttachingPolls: 4}); err != nil {
		t.Fatal(err)
	}
	f.s.ResetCalls()
	if got, err := p.Attach(ctx, id); err != nil || got != dev {
		t.Fatalf("Attach = %q, %v", got, err)
	}
	// One DescribeVolumes before attaching, then 4 that say "attaching" and one that says "attached".
	if n := f.s.Calls()["DescribeVolumes"]; n != 6 {
		t.Errorf("DescribeVolumes called %d times, want 6", n)
	}
	// Bounded by its context: an attachment that never ends fails when ctx does.
	id2 := f.volume(t, zoneA, nil)
	if err := f.s.SetFaults(fakeaws.Faults{AttachingPolls: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	p.pollFirst = 50 * time.Millisecond
	go func() {
		for f.s.Calls()["DescribeVolumes"] < 10 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := p.Attach(cctx, id2); !errors.Is(err, context.Canceled) {
		t.Errorf("Attach of an attachment that never ends = %v, want the context's end", err)
	}
}

func TestVolumesHeld(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	a, b := f.instance(t, zoneA), f.instance(t, zoneA)
	pa, pb := f.provider(t, a, zoneA), f.provider(t, b, zoneA)
	id := f.volume(t, zoneA, nil)
	nvme(t, pa, id)
	nvme(t, pb, id)

	// Two instances race for one volume, many times over: exactly one attaches it, the other is refused.
	const rounds = 10
	for round := range rounds {
		var wg sync.WaitGroup
		var errs [2]error
		var devs [2]string
		for i, p := range []*Volumes{pa, pb} {
			wg.Go(func() { devs[i], errs[i] = p.Attach(ctx, id) })
		}
		wg.Wait()
		won := 0
		for i := range errs {
			if errs[i] == nil {
				won++
				continue
			}
			var held *volumetasks.HeldError
			if !errors.As(errs[i], &held) || !errors.Is(errs[i], volumetasks.ErrHeld) {
				t.Fatalf("round %d: the loser's error = %v, want a HeldError", round, errs[i])
			}
			winner := []volumetasks.Holder{a, b}[1-i]
			if held.Holder != winner || held.VolumeID != id {
				t.Errorf("round %d: held by %+v, want %+v", round, held.Holder, winner)
			}
			if !strings.Contains(held.Error(), "aws ec2 detach-volume --volume-id "+id) || !strings.Contains(held.Error(), winner.InternalIP) {
				t.Errorf("round %d: %v: want the holder's address and the way out", round, held)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d instances attached the volume (%v), want exactly 1", round, won, errs)
		}
		// The loser sees the winner as the holder, and has nothing attached.
		winner, loser := pa, pb
		if errs[0] != nil {
			winner, loser = pb, pa
		}
		vols, err := loser.List(ctx, nil)
		if err != nil || len(vols) != 1 || vols[0].Holder == nil || *vols[0].Holder != winner.me {
			t.Fatalf("round %d: the loser lists %+v, %v", round, vols, err)
		}
		if dev, err := loser.Attached(ctx, id); err != nil || dev != "" {
			t.Errorf("round %d: the loser's Attached = %q, %v", round, dev, err)
		}
		// Its Detach leaves the winner's attachment alone; the winner's releases it for the next round.
		f.s.ResetCalls()
		if err := loser.Detach(ctx, id); err != nil {
			t.Fatal(err)
		}
		if n := f.s.Calls()["DetachVolume"]; n != 0 {
			t.Errorf("the loser's Detach called DetachVolume %d times", n)
		}
		if err := winner.Detach(ctx, id); err != nil {
			t.Fatal(err)
		}
		if dev, err := winner.Attached(ctx, id); err != nil || dev != "" {
			t.Fatalf("round %d: after Detach, Attached = %q, %v", round, dev, err)
		}
	}
}

func TestVolumesClassifiesErrors(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me := f.instance(t, zoneA)
	p := f.provider(t, me, zoneA)
	if err := f.s.SetFaults(fakeaws.Faults{ThrottleRate: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(ctx, nil); engine.ClassOf(err) != engine.ClassRetryable {
		t.Errorf("List, throttled = %v, want retryable", err)
	}
	if err := f.s.SetFaults(fakeaws.Faults{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Attach(ctx, "vol-00000000000000bad"); engine.ClassOf(err) != engine.ClassTerminal || !strings.Contains(err.Error(), "InvalidVolume.NotFound") {
		t.Errorf("Attach of a volume that does not exist = %v, want a terminal InvalidVolume.NotFound", err)
	}
}
