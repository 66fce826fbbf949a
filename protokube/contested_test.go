package protokube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// otherAttachment makes every DescribeVolumes answer of the clients it wraps show volume attached to instance
// too, attached at: the fake keeps one attachment per volume, EC2 with Multi-Attach several.
type otherAttachment struct {
	mu       sync.Mutex
	volume   string
	instance string
	at       time.Time
	// both is closed once an answer showed the volume attached to the fake's instance and to instance at once.
	both     chan struct{}
	bothOnce sync.Once
}

// watch returns a channel closed once an answer read from now on showed the volume attached to the fake's
// instance and to instance at once.
func (o *otherAttachment) watch() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.both, o.bothOnce = make(chan struct{}), sync.Once{}
	return o.both
}

func (o *otherAttachment) rewrite(out *ec2.DescribeVolumesOutput) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range out.Volumes {
		v := &out.Volumes[i]
		if aws.ToString(v.VolumeId) != o.volume {
			continue
		}
		if len(v.Attachments) > 0 {
			o.bothOnce.Do(func() { close(o.both) })
		}
		v.Attachments = append(v.Attachments, types.VolumeAttachment{VolumeId: aws.String(o.volume), InstanceId: aws.String(o.instance),
			Device: aws.String("/dev/xvdq"), State: types.VolumeAttachmentStateAttached, AttachTime: aws.Time(o.at)})
		v.MultiAttachEnabled = aws.Bool(true)
	}
}

// client returns an EC2 client of the fake that sees the volumes through o.
func (o *otherAttachment) client(cfg aws.Config) *ec2.Client {
	return ec2.NewFromConfig(cfg, func(opts *ec2.Options) {
		opts.APIOptions = append(opts.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("other-attachment", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if dv, ok := out.Result.(*ec2.DescribeVolumesOutput); ok && err == nil {
					o.rewrite(dv)
				}
				return out, md, err
			}), middleware.Before)
		})
	})
}

// raceNode is an instance of the race, with its volumes provider and its root.
type raceNode struct {
	me   volumetasks.Holder
	vols *awstasks.Volumes
	root string
}

// race is an etcd member volume of zone us-east-1a attached to two instances at once, as EC2 shows a
// Multi-Attach volume that both attached in a race: the fake's own attachment is the loser's, made second; the
// winner's, a second earlier, is added to what the clients read (otherAttachment).
type race struct {
	f              *awsFixture
	pc             *model.ProtokubeConfig
	id             string
	winner, loser  raceNode
	other          *otherAttachment
	loserMountInfo string
}

func newRace(t *testing.T) *race {
	t.Helper()
	ctx := context.Background()
	const zone = "us-east-1a"
	f := newAWSAccount(t, "example.com", "", zone)
	im, err := f.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(im.Images) == 0 {
		t.Fatalf("DescribeImages: %v, %v", im, err)
	}
	var nodes []volumetasks.Holder
	for range 2 {
		out, err := f.ec2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: im.Images[0].ImageId, SubnetId: aws.String(f.subnets[0]), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
		if err != nil {
			t.Fatal(err)
		}
		i := out.Instances[0]
		nodes = append(nodes, volumetasks.Holder{NodeID: aws.ToString(i.InstanceId), InternalIP: aws.ToString(i.PrivateIpAddress), ExternalIP: aws.ToString(i.PublicIpAddress)})
	}
	pc := testConfig()
	pc.Zone = zone
	pc.ClusterTag = model.Tag{Key: "kubernetes.io/cluster/" + pc.ClusterName, Value: "owned"}
	r := &race{f: f, pc: pc, id: f.volume(t, zone, map[string]string{pc.ClusterTag.Key: "owned", model.TagControlPlane: "1", "k8s.io/etcd/main": "a/a,b,c"})}

	// The loser's attachment is the fake's.
	if _, err := f.ec2.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(r.id), InstanceId: aws.String(nodes[1].NodeID), Device: aws.String("/dev/xvdf")}); err != nil {
		t.Fatal(err)
	}
	var at time.Time
	for at.IsZero() { // the fake moves an attachment from attaching to attached as it is described
		out, err := f.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{r.id}})
		if err != nil {
			t.Fatal(err)
		}
		if a := out.Volumes[0].Attachments; len(a) == 1 && a[0].State == types.VolumeAttachmentStateAttached {
			at = aws.ToTime(a[0].AttachTime)
		}
	}
	r.other = &otherAttachment{volume: r.id, instance: nodes[0].NodeID, at: at.Add(-time.Second), both: make(chan struct{})}
	node := func(me volumetasks.Holder, mountTable string) raceNode {
		root := t.TempDir()
		// The volume's NVMe link on the node, to a file standing for the device.
		dev := filepath.Join(root, "dev", "nvme1n1")
		link := filepath.Join(root, "dev", "disk", "by-id", "nvme-Amazon_Elastic_Block_Store_"+strings.ReplaceAll(r.id, "-", ""))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dev, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(dev, link); err != nil {
			t.Fatal(err)
		}
		return raceNode{me: me, root: root, vols: awstasks.NewVolumes(r.other.client(f.cfg), me, zone, awstasks.VolumesOptions{Root: root, MountTable: mountTable})}
	}
	r.loserMountInfo = filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(r.loserMountInfo, []byte("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.winner, r.loser = node(nodes[0], ""), node(nodes[1], r.loserMountInfo)
	f.s.ResetCalls()
	return r
}

// choose is n's round's choice, as protokube makes it from what n lists.
func (r *race) choose(t *testing.T, n raceNode) *choice {
	t.Helper()
	found, err := n.vols.List(context.Background(), map[string]string{r.pc.ClusterTag.Key: r.pc.ClusterTag.Value, model.TagControlPlane: "1"})
	if err != nil {
		t.Fatal(err)
	}
	return choose(r.pc, n.me.NodeID, found)
}

// attachedTo returns the instances the fake itself shows the volume attached to.
func (r *race) attachedTo(t *testing.T) []string {
	t.Helper()
	out, err := r.f.ec2.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{VolumeIds: []string{r.id}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range out.Volumes[0].Attachments {
		ids = append(ids, aws.ToString(a.InstanceId))
	}
	return ids
}

// loserRound runs the loser's part of a round (its detachments) on target, and returns the text report.
func (r *race) loserRound(t *testing.T, target engine.Target) (string, error) {
	t.Helper()
	ch := r.choose(t, r.loser)
	if len(ch.lost) != 1 || ch.lost[0].volume.ID != r.id || len(ch.mine) != 0 {
		t.Fatalf("the loser chose %v and lost %v; want to lose %s and hold nothing", ch.mine, ch.lost, r.id)
	}
	g := engine.NewGraph[*Round]()
	addDetaches(g, ch)
	if err := checkOwned("the loser's round", g, nil); err != nil {
		t.Fatalf("checkOwned refuses the loser's round: %v", err) // the round would fail before it detached
	}
	res, err := engine.Run(context.Background(), g, &Round{volumes: r.loser.vols}, engine.Options{Target: target, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var text bytes.Buffer
	if res != nil {
		if werr := res.Plan.WriteTextApplying(&text, "Run protokube without --dryrun to apply these changes"); werr != nil {
			t.Fatal(werr)
		}
	}
	return text.String(), err
}

// TestLostMultiAttachRace: two control-plane instances attached one etcd member volume at once (EBS
// Multi-Attach). Both refused it every round until a person detached it from one. Now the earlier attachment
// wins: the winner's round waits for the other attachment to go (its attachment is not ready, nothing formats or
// mounts the volume); the loser's dry run says it would detach its attachment (VolumeDetach) and detaches
// nothing; the loser's round detaches it; and the winner's round, which was waiting, then finds its device.
func TestLostMultiAttachRace(t *testing.T) {
	ctx := context.Background()
	r := newRace(t)

	ch := r.choose(t, r.winner)
	mv, ok := ch.mine["main"]
	if !ok || mv.volume.ID != r.id || len(ch.lost) != 0 {
		t.Fatalf("the winner chose %v and lost %v; want to hold %s", ch.mine, ch.lost, r.id)
	}
	g := engine.NewGraph[*Round]()
	attach := addAttach(g, mv)
	sawBoth := r.other.watch() // what the winner reads from now on
	winner := make(chan error, 1)
	go func() {
		_, err := engine.Run(ctx, g, &Round{volumes: r.winner.vols}, engine.Options{Target: engine.Apply, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		winner <- err
	}()
	select { // the winner's attachment saw the loser's
	case <-sawBoth:
	case err := <-winner:
		t.Fatalf("the winner's round ended while the volume is attached to the loser too: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the winner's round did not read the volume within a minute")
	}

	text, err := r.loserRound(t, engine.DryRun)
	if err != nil {
		t.Fatalf("the loser's dry run: %v", err)
	}
	if want := "Will modify resources:\n  VolumeDetach/" + r.id + "\n    Attached    true -> false\n"; !strings.Contains(text, want) {
		t.Errorf("the loser's dry run says:\n%s\nwant it to say\n%s", text, want)
	}
	if n := r.f.s.Calls()["DetachVolume"]; n != 0 {
		t.Errorf("the loser's dry run called DetachVolume %d times", n)
	}
	if got := r.attachedTo(t); len(got) != 1 || got[0] != r.loser.me.NodeID {
		t.Errorf("after the loser's dry run the volume is attached to %v, want the loser still", got)
	}
	select {
	case err := <-winner:
		t.Fatalf("the winner's round ended while the volume is attached to the loser too: %v", err)
	default:
	}

	if _, err := r.loserRound(t, engine.Apply); err != nil {
		t.Fatalf("the loser's round: %v", err)
	}
	if got := r.attachedTo(t); len(got) != 0 {
		t.Errorf("after the loser's round the fake shows the volume attached to %v, want the loser's attachment gone", got)
	}
	select {
	case err := <-winner:
		if err != nil {
			t.Fatalf("the winner's round: %v", err)
		}
	case <-time.After(contestedWait):
		t.Fatal("the winner's round did not end once the loser detached")
	}
	if want := filepath.Join(r.winner.root, "dev", "nvme1n1"); attach.AttachedDevice() != want {
		t.Errorf("the winner's attachment is %q, want %s", attach.AttachedDevice(), want)
	}
	if ch := r.choose(t, r.loser); len(ch.lost) != 0 || len(ch.mine) != 0 {
		t.Errorf("the loser's next round chooses %v and loses %v; want nothing", ch.mine, ch.lost)
	}
}

// TestLostMultiAttachRaceMounted: the loser of the race has the volume's device mounted (by hand): its round,
// dry run or not, refuses to detach it with a terminal error that names the mount point and what a person does,
// and detaches nothing.
func TestLostMultiAttachRaceMounted(t *testing.T) {
	r := newRace(t)
	mp := filepath.Join(r.loser.root, "mnt", "inspect")
	table := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"95 22 259:3 / " + mp + " rw,relatime shared:50 - ext4 " + filepath.Join(r.loser.root, "dev", "nvme1n1") + " rw\n"
	if err := os.WriteFile(r.loserMountInfo, []byte(table), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		_, err := r.loserRound(t, target)
		var te *engine.TaskError
		if !errors.As(err, &te) || engine.ClassOf(te.Err) != engine.ClassTerminal {
			t.Fatalf("%v: %v, want a terminal task error", target, err)
		}
		for _, want := range []string{"VolumeDetach/" + r.id, "mounted at " + mp, "umount " + mp, "nothing is detached", r.winner.me.NodeID} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %v\nwant it to say %q", target, err, want)
			}
		}
	}
	if n := r.f.s.Calls()["DetachVolume"]; n != 0 {
		t.Errorf("DetachVolume called %d times", n)
	}
	if got := r.attachedTo(t); len(got) != 1 || got[0] != r.loser.me.NodeID {
		t.Errorf("the volume is attached to %v, want the loser still", got)
	}
}

// TestChooseLost: a member volume of this zone attached to this node and to another that won it is lost (this
// node detaches its attachment) and never this node's, which may claim a free one instead; the winner keeps it;
// a volume whose tag names no member, or of another zone, or attached to other nodes only, is never detached.
func TestChooseLost(t *testing.T) {
	also := func(v volumetasks.Volume, holders ...string) volumetasks.Volume {
		for _, h := range holders {
			v.AlsoAttached = append(v.AlsoAttached, volumetasks.Holder{NodeID: h})
		}
		return v
	}
	tests := []struct {
		name string
		vols []volumetasks.Volume
		mine map[string]string // etcd cluster -> volume
		lost []string
	}{
		{name: "lost to node2: let go, and a free one claimed",
			vols: []volumetasks.Volume{also(vol("a.main", "main", "a", "a", "node2"), "node1"), vol("b.main", "main", "b", "a", "")},
			mine: map[string]string{"main": "b.main"}, lost: []string{"a.main"}},
		{name: "won against node2: kept",
			vols: []volumetasks.Volume{also(vol("a.main", "main", "a", "a", "node1"), "node2")},
			mine: map[string]string{"main": "a.main"}},
		{name: "attached to other nodes only: left alone",
			vols: []volumetasks.Volume{also(vol("a.main", "main", "a", "a", "node2"), "node3")},
			mine: map[string]string{}},
		{name: "a tag that names no member: left alone",
			vols: []volumetasks.Volume{also(vol("x.main", "main", "x", "a", "node2"), "node1")},
			mine: map[string]string{}},
		{name: "another zone's: left alone",
			vols: []volumetasks.Volume{also(vol("a.main", "main", "a", "b", "node2"), "node1")},
			mine: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := choose(testConfig(), "node1", tt.vols)
			mine := map[string]string{}
			for c, mv := range ch.mine {
				mine[c] = mv.volume.ID
			}
			var lost []string
			for _, mv := range ch.lost {
				lost = append(lost, mv.volume.ID)
			}
			if fmt.Sprint(mine) != fmt.Sprint(tt.mine) || fmt.Sprint(lost) != fmt.Sprint(tt.lost) {
				t.Errorf("chose %v and lost %v, want %v and %v", mine, lost, tt.mine, tt.lost)
			}
		})
	}
}
