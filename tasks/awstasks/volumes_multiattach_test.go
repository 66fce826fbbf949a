package awstasks

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go/middleware"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// multiAttach makes a volume of the fake look attached to more instances than the fake attached it to, as EC2
// shows an io2 volume with Multi-Attach: the fake keeps one attachment per volume, so the extra ones are added
// to every DescribeVolumes answer the client decodes (the fake's own attachment stays where EC2's order puts
// it). An instance's attachment is "attached".
type multiAttach struct {
	mu     sync.Mutex
	volume string
	before []string // instances listed before the fake's own attachment
	after  []string // and after it
	// whileAttached adds the extra attachments only while the fake shows the volume attached (to anyone): an
	// instance that attached it at the same time as this one.
	whileAttached bool
}

func (m *multiAttach) set(volume string, before, after []string, whileAttached bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.volume, m.before, m.after, m.whileAttached = volume, before, after, whileAttached
}

func (m *multiAttach) rewrite(out *ec2.DescribeVolumesOutput) {
	m.mu.Lock()
	defer m.mu.Unlock()
	att := func(id string) types.VolumeAttachment {
		return types.VolumeAttachment{VolumeId: aws.String(m.volume), InstanceId: aws.String(id), Device: aws.String("/dev/xvdq"), State: types.VolumeAttachmentStateAttached}
	}
	for i := range out.Volumes {
		vol := &out.Volumes[i]
		if aws.ToString(vol.VolumeId) != m.volume || (m.whileAttached && len(vol.Attachments) == 0) {
			continue
		}
		var all []types.VolumeAttachment
		for _, id := range m.before {
			all = append(all, att(id))
		}
		all = append(all, vol.Attachments...)
		for _, id := range m.after {
			all = append(all, att(id))
		}
		vol.Attachments, vol.MultiAttachEnabled = all, aws.Bool(true)
	}
}

// multiAttachProvider returns the Volumes of instance me whose EC2 client sees the volumes through m.
func (f *ec2Fixture) multiAttachProvider(t *testing.T, me volumetasks.Holder, m *multiAttach) *Volumes {
	t.Helper()
	client := ec2.NewFromConfig(f.cfg, func(o *ec2.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("multi-attach", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if dv, ok := out.Result.(*ec2.DescribeVolumesOutput); ok && err == nil {
					m.rewrite(dv)
				}
				return out, md, err
			}), middleware.Before)
		})
	})
	p := f.provider(t, me, zoneA)
	p.client = client
	return p
}

// wantHeld checks that err is a HeldError of volume id whose holder is holder (with its address), and that its
// message names every instance of names.
func wantHeld(t *testing.T, what string, err error, id string, holder volumetasks.Holder, names ...string) {
	t.Helper()
	var held *volumetasks.HeldError
	if !errors.As(err, &held) || !errors.Is(err, volumetasks.ErrHeld) || engine.ClassOf(err) != engine.ClassTerminal {
		t.Fatalf("%s = %v, want a terminal HeldError", what, err)
	}
	if held.VolumeID != id || held.Holder != holder {
		t.Errorf("%s: volume %s held by %+v, want %s held by %+v", what, held.VolumeID, held.Holder, id, holder)
	}
	for _, want := range append([]string{id, "Multi-Attach", "aws ec2 detach-volume --volume-id " + id, holder.InternalIP}, names...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant it to name %q", what, err, want)
		}
	}
}

// TestVolumesMultiAttachedHereAndElsewhere: a volume attached to this instance and to another at once (EC2 lists
// [this, other] or [other, this]) was taken for this instance's (the first attachment that was not detached), and
// protokube formatted and mounted it. Attached now refuses it, naming the other holder; Attach never calls
// AttachVolume; List shows this instance as its holder whatever the order (so that its task finds it, and
// refuses it); Detach detaches this instance's attachment, whichever place it has.
func TestVolumesMultiAttachedHereAndElsewhere(t *testing.T) {
	ctx := context.Background()
	for _, otherFirst := range []bool{false, true} {
		f := newEC2Fixture(t)
		me, other := f.instance(t, zoneA), f.instance(t, zoneA)
		tags := map[string]string{"kubernetes.io/cluster/c": "owned"}
		id := f.volume(t, zoneA, tags)
		m := &multiAttach{}
		p := f.multiAttachProvider(t, me, m)
		nvme(t, p, id)
		if _, err := p.Attach(ctx, id); err != nil { // the fake's own attachment: this instance's
			t.Fatal(err)
		}
		if otherFirst {
			m.set(id, []string{other.NodeID}, nil, false)
		} else {
			m.set(id, nil, []string{other.NodeID}, false)
		}

		vols, err := p.List(ctx, tags)
		if err != nil || len(vols) != 1 || vols[0].Holder == nil || *vols[0].Holder != me {
			t.Fatalf("other first %v: List = %+v, %v; want held by this instance", otherFirst, vols, err)
		}
		dev, err := p.Attached(ctx, id) // as the List read it
		if dev != "" {
			t.Errorf("other first %v: Attached named device %q of a volume attached elsewhere too", otherFirst, dev)
		}
		wantHeld(t, "Attached", err, id, other, other.NodeID, me.NodeID+" (this instance)")
		dev, err = p.Attached(ctx, id) // as EC2 describes it now
		if dev != "" {
			t.Errorf("other first %v: Attached (described) named device %q", otherFirst, dev)
		}
		wantHeld(t, "Attached (described)", err, id, other, other.NodeID)

		f.s.ResetCalls()
		dev, err = p.Attach(ctx, id)
		if dev != "" {
			t.Errorf("other first %v: Attach named device %q", otherFirst, dev)
		}
		wantHeld(t, "Attach", err, id, other, other.NodeID, me.NodeID)
		if n := f.s.Calls()["AttachVolume"]; n != 0 {
			t.Errorf("other first %v: Attach called AttachVolume %d times", otherFirst, n)
		}

		// Detach releases this instance's attachment (the fake's), and only that one.
		f.s.ResetCalls()
		if err := p.Detach(ctx, id); err != nil {
			t.Fatal(err)
		}
		if n := f.s.Calls()["DetachVolume"]; n != 1 {
			t.Errorf("other first %v: Detach called DetachVolume %d times, want 1", otherFirst, n)
		}
		out, err := f.client.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
		if err != nil || len(out.Volumes) != 1 || len(out.Volumes[0].Attachments) != 0 {
			t.Errorf("other first %v: after Detach the fake shows %+v, %v; want it detached from this instance", otherFirst, out, err)
		}
		// What stays is the other's: held, and not this instance's any more.
		if vols, err := p.List(ctx, tags); err != nil || len(vols) != 1 || vols[0].Holder == nil || *vols[0].Holder != other {
			t.Errorf("other first %v: after Detach, List = %+v, %v; want held by the other instance", otherFirst, vols, err)
		}
		if dev, err := p.Attached(ctx, id); dev != "" || err != nil {
			t.Errorf("other first %v: after Detach, Attached = %q, %v; want not attached here", otherFirst, dev, err)
		}
	}
}

// TestVolumesMultiAttachedElsewhere: a volume attached to two other instances is held, the error names both, and
// it is never attached here.
func TestVolumesMultiAttachedElsewhere(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me, o1, o2 := f.instance(t, zoneA), f.instance(t, zoneA), f.instance(t, zoneA)
	id := f.volume(t, zoneA, nil)
	m := &multiAttach{}
	p := f.multiAttachProvider(t, me, m)
	nvme(t, p, id)
	m.set(id, []string{o1.NodeID, o2.NodeID}, nil, false)

	f.s.ResetCalls()
	_, err := p.Attach(ctx, id)
	wantHeld(t, "Attach", err, id, o1, o1.NodeID, o2.NodeID, "2 instances")
	if strings.Contains(err.Error(), me.NodeID) {
		t.Errorf("Attach: %v names this instance, which does not hold the volume", err)
	}
	if n := f.s.Calls()["AttachVolume"]; n != 0 {
		t.Errorf("Attach called AttachVolume %d times", n)
	}
	if dev, err := p.Attached(ctx, id); dev != "" || err != nil {
		t.Errorf("Attached = %q, %v; want not attached here", dev, err)
	}
	if vols, err := p.List(ctx, nil); err != nil || len(vols) != 1 || vols[0].Holder == nil || *vols[0].Holder != o1 {
		t.Errorf("List = %+v, %v; want held by %s", vols, err, o1.NodeID)
	}
}

// TestVolumesMultiAttachRace: another instance attaches a Multi-Attach volume at the same time as this one (both
// saw it free): the wait for this instance's attachment sees the other's and refuses the volume, naming it,
// instead of returning a device to format and mount; the next Find refuses it too.
func TestVolumesMultiAttachRace(t *testing.T) {
	ctx := context.Background()
	f := newEC2Fixture(t)
	me, other := f.instance(t, zoneA), f.instance(t, zoneA)
	id := f.volume(t, zoneA, nil)
	m := &multiAttach{}
	p := f.multiAttachProvider(t, me, m)
	nvme(t, p, id)
	m.set(id, []string{other.NodeID}, nil, true) // seen only once this instance's attachment is there

	dev, err := p.Attach(ctx, id)
	if dev != "" {
		t.Errorf("Attach named device %q of a volume another instance attached too", dev)
	}
	wantHeld(t, "Attach", err, id, other, other.NodeID, me.NodeID+" (this instance)")
	if n := f.s.Calls()["AttachVolume"]; n != 1 {
		t.Errorf("AttachVolume called %d times, want 1 (the volume was free when Attach looked)", n)
	}
	dev, err = p.Attached(ctx, id)
	if dev != "" {
		t.Errorf("Attached named device %q", dev)
	}
	wantHeld(t, "Attached", err, id, other, other.NodeID)
}
