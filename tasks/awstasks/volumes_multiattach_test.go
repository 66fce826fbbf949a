package awstasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	// at is the extra attachments' AttachTime (none when zero); state their state ("attached" when "").
	at    time.Time
	state types.VolumeAttachmentState
}

func (m *multiAttach) set(volume string, before, after []string, whileAttached bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.volume, m.before, m.after, m.whileAttached = volume, before, after, whileAttached
}

// attachedAt sets the extra attachments' AttachTime.
func (m *multiAttach) attachedAt(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.at = at
}

func (m *multiAttach) rewrite(out *ec2.DescribeVolumesOutput) {
	m.mu.Lock()
	defer m.mu.Unlock()
	att := func(id string) types.VolumeAttachment {
		a := types.VolumeAttachment{VolumeId: aws.String(m.volume), InstanceId: aws.String(id), Device: aws.String("/dev/xvdq"), State: types.VolumeAttachmentStateAttached}
		if m.state != "" {
			a.State = m.state
		}
		if !m.at.IsZero() {
			a.AttachTime = aws.Time(m.at)
		}
		return a
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

// wantContested checks that err is a ContestedError of volume id attached to me and loser, which winner keeps:
// not ready when me won (it waits for the others to detach theirs), terminal and matching ErrHeld when me lost.
func wantContested(t *testing.T, what string, err error, id string, me, winner, loser volumetasks.Holder) {
	t.Helper()
	var c *volumetasks.ContestedError
	if !errors.As(err, &c) {
		t.Fatalf("%s = %v, want a ContestedError", what, err)
	}
	won := winner == me
	class := engine.ClassTerminal
	if won {
		class = engine.ClassNotReady
	}
	if c.VolumeID != id || c.Winner != winner || len(c.Losers) != 1 || c.Losers[0] != loser || c.Won() != won {
		t.Errorf("%s: %+v, want volume %s won by %+v, lost by %+v", what, c, id, winner, loser)
	}
	if engine.ClassOf(err) != class || errors.Is(err, volumetasks.ErrHeld) == won {
		t.Errorf("%s: class %v, matches ErrHeld %v; want %v, %v", what, engine.ClassOf(err), errors.Is(err, volumetasks.ErrHeld), class, !won)
	}
	for _, want := range []string{id, winner.NodeID + " keeps it", loser.NodeID, winner.InternalIP, "AttachTime", "aws ec2 detach-volume --volume-id " + id + " --instance-id ID, for ID in " + loser.NodeID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant it to name %q", what, err, want)
		}
	}
}

// attachTime is the AttachTime the fake gave its attachment of volume id.
func (f *ec2Fixture) attachTime(t *testing.T, id string) time.Time {
	t.Helper()
	out, err := f.client.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
	if err != nil || len(out.Volumes) != 1 || len(out.Volumes[0].Attachments) != 1 || out.Volumes[0].Attachments[0].AttachTime == nil {
		t.Fatalf("volume %s: %+v, %v; want one attachment with its time", id, out, err)
	}
	return *out.Volumes[0].Attachments[0].AttachTime
}

// attachedTo returns the instances the fake itself shows volume id attached to.
func (f *ec2Fixture) attachedTo(t *testing.T, id string) []string {
	t.Helper()
	out, err := f.client.DescribeVolumes(context.Background(), &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
	if err != nil || len(out.Volumes) != 1 {
		t.Fatalf("volume %s: %+v, %v", id, out, err)
	}
	var ids []string
	for _, a := range out.Volumes[0].Attachments {
		ids = append(ids, aws.ToString(a.InstanceId))
	}
	return ids
}

// contest is a volume attached to this instance (the fake's own attachment) and to another (an extra one,
// attached offset after this instance's, before it when negative, in state otherState, "attached" when ""),
// listed before or after this instance's.
type contest struct {
	f            *ec2Fixture
	p            *Volumes
	m            *multiAttach
	id           string
	me, other    volumetasks.Holder
	winner, lost volumetasks.Holder
	tags         map[string]string
}

func newContest(t *testing.T, offset time.Duration, otherFirst bool, otherState types.VolumeAttachmentState) *contest {
	t.Helper()
	f := newEC2Fixture(t)
	c := &contest{f: f, me: f.instance(t, zoneA), other: f.instance(t, zoneA), m: &multiAttach{},
		tags: map[string]string{"kubernetes.io/cluster/c": "owned"}}
	c.id = f.volume(t, zoneA, c.tags)
	c.p = f.multiAttachProvider(t, c.me, c.m)
	nvme(t, c.p, c.id)
	if _, err := c.p.Attach(context.Background(), c.id); err != nil {
		t.Fatal(err)
	}
	c.m.attachedAt(f.attachTime(t, c.id).Add(offset))
	c.m.state = otherState
	if otherFirst {
		c.m.set(c.id, []string{c.other.NodeID}, nil, false)
	} else {
		c.m.set(c.id, nil, []string{c.other.NodeID}, false)
	}
	c.winner, c.lost = c.other, c.me
	if otherState == types.VolumeAttachmentStateDetaching || offset > 0 || offset == 0 && c.me.NodeID < c.other.NodeID {
		c.winner, c.lost = c.me, c.other
	}
	f.s.ResetCalls()
	return c
}

// TestVolumesMultiAttachRanking: a volume attached to this instance and to another at once (both attached it in
// a race; EBS Multi-Attach) was refused for ever on both, until a person detached it from one. The earliest
// attachment (EC2's AttachTime; at the same time, the lowest instance id; one that is detaching never) wins now,
// whatever EC2's order of the attachments: List names the winner as the holder and the loser as AlsoAttached; Attached and Attach refuse the
// volume on both (nothing formats or mounts it), not ready on the winner (it waits), terminal on the loser, and
// never call AttachVolume; Lost names the loser's attachment and its device, on the loser only.
func TestVolumesMultiAttachRanking(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		offset time.Duration
		state  types.VolumeAttachmentState
	}{{"the other attached earlier", -time.Second, ""}, {"this instance attached earlier", time.Second, ""}, {"at the same time", 0, ""},
		{"the other attached earlier and is detaching", -time.Second, types.VolumeAttachmentStateDetaching}} {
		for _, otherFirst := range []bool{false, true} {
			c := newContest(t, tc.offset, otherFirst, tc.state)
			what := func(s string) string { return fmt.Sprintf("%s, other listed first %v: %s", tc.name, otherFirst, s) }

			vols, err := c.p.List(ctx, c.tags)
			if err != nil || len(vols) != 1 || vols[0].Holder == nil || *vols[0].Holder != c.winner ||
				len(vols[0].AlsoAttached) != 1 || vols[0].AlsoAttached[0] != c.lost {
				t.Fatalf("%s = %+v, %v; want held by %s, also attached to %s", what("List"), vols, err, c.winner.NodeID, c.lost.NodeID)
			}
			dev, err := c.p.Attached(ctx, c.id) // as the List read it
			if dev != "" {
				t.Errorf("%s named device %q of a volume attached elsewhere too", what("Attached"), dev)
			}
			wantContested(t, what("Attached"), err, c.id, c.me, c.winner, c.lost)
			_, err = c.p.Attached(ctx, c.id) // as EC2 describes it now
			wantContested(t, what("Attached (described)"), err, c.id, c.me, c.winner, c.lost)
			dev, err = c.p.Attach(ctx, c.id)
			if dev != "" {
				t.Errorf("%s named device %q", what("Attach"), dev)
			}
			wantContested(t, what("Attach"), err, c.id, c.me, c.winner, c.lost)
			if n := c.f.s.Calls()["AttachVolume"]; n != 0 {
				t.Errorf("%s called AttachVolume %d times", what("Attach"), n)
			}

			loss, err := c.p.Lost(ctx, c.id)
			switch {
			case err != nil:
				t.Errorf("%s: %v", what("Lost"), err)
			case c.winner == c.me && loss != nil:
				t.Errorf("%s = %+v on the winner, want nil", what("Lost"), loss)
			case c.winner == c.other && (loss == nil || loss.Winner != c.other || loss.VolumeID != c.id ||
				!slices.Equal(loss.Devices, []string{filepath.Join(c.p.root, nvmeLink(c.id))}) || loss.Use.InUse()):
				t.Errorf("%s = %+v on the loser, want won by %s, its NVMe link, not in use", what("Lost"), loss, c.other.NodeID)
			}
		}
	}
}

// TestVolumesDetachLost: the loser of a Multi-Attach race detaches its own attachment (one DetachVolume), and
// the volume is then the winner's alone; the winner detaches nothing.
func TestVolumesDetachLost(t *testing.T) {
	ctx := context.Background()
	c := newContest(t, -time.Second, false, "") // the other won
	if err := c.p.DetachLost(ctx, c.id); err != nil {
		t.Fatal(err)
	}
	if n := c.f.s.Calls()["DetachVolume"]; n != 1 {
		t.Errorf("DetachLost called DetachVolume %d times, want 1", n)
	}
	if got := c.f.attachedTo(t, c.id); len(got) != 0 {
		t.Errorf("after DetachLost the fake shows the volume attached to %v; want this instance's attachment gone", got)
	}
	vols, err := c.p.List(ctx, c.tags)
	if err != nil || len(vols) != 1 || vols[0].Holder == nil || *vols[0].Holder != c.other || len(vols[0].AlsoAttached) != 0 {
		t.Errorf("after DetachLost, List = %+v, %v; want held by %s alone", vols, err, c.other.NodeID)
	}
	if dev, err := c.p.Attached(ctx, c.id); dev != "" || err != nil {
		t.Errorf("after DetachLost, Attached = %q, %v; want not attached here", dev, err)
	}
	if loss, err := c.p.Lost(ctx, c.id); loss != nil || err != nil {
		t.Errorf("after DetachLost, Lost = %+v, %v; want nil", loss, err)
	}

	w := newContest(t, time.Second, false, "") // this instance won
	if err := w.p.DetachLost(ctx, w.id); err != nil {
		t.Fatal(err)
	}
	if n := w.f.s.Calls()["DetachVolume"]; n != 0 {
		t.Errorf("DetachLost on the winner called DetachVolume %d times", n)
	}
	if got := w.f.attachedTo(t, w.id); !slices.Equal(got, []string{w.me.NodeID}) {
		t.Errorf("after DetachLost on the winner the fake shows the volume attached to %v, want this instance still", got)
	}
}

// TestVolumesDetachLostRefusesInUse: the loser's attachment is not detached while its device is mounted on this
// machine, whichever name of it the mount table shows (the NVMe device, its link, the attachment's device name
// in either spelling): the error is terminal, names the mount point and what a person does; nothing is detached.
// A mount table that cannot be read detaches nothing either.
func TestVolumesDetachLostRefusesInUse(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"nvme device", "nvme link", "/dev/xvdf", "/dev/sdf"} {
		t.Run(name, func(t *testing.T) {
			c := newContest(t, -time.Second, false, "")
			source := filepath.Join(c.p.root, "dev", "nvme-"+c.id)
			switch name {
			case "nvme link":
				source = filepath.Join(c.p.root, nvmeLink(c.id))
			case "/dev/xvdf", "/dev/sdf": // the fake attached it as /dev/xvdf
				source = filepath.Join(c.p.root, name)
				if err := os.WriteFile(source, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			mp := filepath.Join(c.p.root, "mnt", "by hand")
			c.p.mountTable = filepath.Join(t.TempDir(), "mountinfo")
			table := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
				"95 22 259:3 / " + strings.ReplaceAll(mp, " ", `\040`) + " rw,relatime shared:50 - ext4 " + source + " rw\n"
			if err := os.WriteFile(c.p.mountTable, []byte(table), 0o600); err != nil {
				t.Fatal(err)
			}
			loss, err := c.p.Lost(ctx, c.id)
			if err != nil || loss == nil || !loss.Use.InUse() || len(loss.Use.Mounts) != 1 || !strings.HasPrefix(loss.Use.Mounts[0], mp+" (") {
				t.Errorf("Lost = %+v, %v; want its device mounted at %s", loss, err, mp)
			}
			err = c.p.DetachLost(ctx, c.id)
			if err == nil || engine.ClassOf(err) != engine.ClassTerminal {
				t.Fatalf("DetachLost of a mounted device = %v, want a terminal error", err)
			}
			for _, want := range []string{c.id, "mounted at " + mp, "umount '" + mp + "'", "node " + c.other.NodeID + " (" + c.other.InternalIP, "nothing is detached",
				"aws ec2 detach-volume --volume-id " + c.id + " --instance-id " + c.me.NodeID} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("DetachLost: %v\nwant it to say %q", err, want)
				}
			}
			if n := c.f.s.Calls()["DetachVolume"]; n != 0 {
				t.Errorf("DetachLost called DetachVolume %d times", n)
			}
			if got := c.f.attachedTo(t, c.id); !slices.Equal(got, []string{c.me.NodeID}) {
				t.Errorf("the fake shows the volume attached to %v, want this instance still", got)
			}
		})
	}
	c := newContest(t, -time.Second, false, "")
	c.p.mountTable = filepath.Join(t.TempDir(), "none")
	if err := c.p.DetachLost(ctx, c.id); err == nil || !strings.Contains(err.Error(), "reading the mount table") {
		t.Errorf("DetachLost without a mount table = %v, want an error saying it cannot be read", err)
	}
	if n := c.f.s.Calls()["DetachVolume"]; n != 0 {
		t.Errorf("DetachLost without a mount table called DetachVolume %d times", n)
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
	m.set(id, []string{o2.NodeID, o1.NodeID}, nil, false)
	winner := min(o1.NodeID, o2.NodeID) // attached at the same time (none said): the lowest id wins
	holder := o1
	if winner == o2.NodeID {
		holder = o2
	}

	f.s.ResetCalls()
	_, err := p.Attach(ctx, id)
	wantHeld(t, "Attach", err, id, holder, o1.NodeID, o2.NodeID, "2 instances")
	if strings.Contains(err.Error(), me.NodeID) {
		t.Errorf("Attach: %v names this instance, which does not hold the volume", err)
	}
	if n := f.s.Calls()["AttachVolume"]; n != 0 {
		t.Errorf("Attach called AttachVolume %d times", n)
	}
	if dev, err := p.Attached(ctx, id); dev != "" || err != nil {
		t.Errorf("Attached = %q, %v; want not attached here", dev, err)
	}
	if loss, err := p.Lost(ctx, id); loss != nil || err != nil {
		t.Errorf("Lost = %+v, %v; want nil (this instance has no attachment)", loss, err)
	}
	if vols, err := p.List(ctx, nil); err != nil || len(vols) != 1 || vols[0].Holder == nil || *vols[0].Holder != holder {
		t.Errorf("List = %+v, %v; want held by %s", vols, err, holder.NodeID)
	}
}

// TestVolumesMultiAttachRace: another instance attaches a Multi-Attach volume at the same time as this one (both
// saw it free). When its attachment is the earlier, this instance lost: Attach refuses the volume (terminal,
// naming the winner) instead of returning a device to format and mount. When this instance's is the earlier, it
// won: Attach is not ready while the other's attachment is there, and gives the device once the other detached
// its attachment.
func TestVolumesMultiAttachRace(t *testing.T) {
	ctx := context.Background()
	for _, otherEarlier := range []bool{true, false} {
		f := newEC2Fixture(t)
		me, other := f.instance(t, zoneA), f.instance(t, zoneA)
		id := f.volume(t, zoneA, nil)
		m := &multiAttach{}
		p := f.multiAttachProvider(t, me, m)
		want := nvme(t, p, id)
		winner, loser := me, other
		if otherEarlier {
			m.attachedAt(time.Now().Add(-time.Hour))
			winner, loser = other, me
		} else {
			m.attachedAt(time.Now().Add(time.Hour))
		}
		m.set(id, []string{other.NodeID}, nil, true) // seen only once this instance's attachment is there

		dev, err := p.Attach(ctx, id)
		if dev != "" {
			t.Errorf("other earlier %v: Attach named device %q of a volume another instance attached too", otherEarlier, dev)
		}
		wantContested(t, "Attach", err, id, me, winner, loser)
		if n := f.s.Calls()["AttachVolume"]; n != 1 {
			t.Errorf("other earlier %v: AttachVolume called %d times, want 1 (the volume was free when Attach looked)", otherEarlier, n)
		}
		dev, err = p.Attached(ctx, id)
		if dev != "" {
			t.Errorf("other earlier %v: Attached named device %q", otherEarlier, dev)
		}
		wantContested(t, "Attached", err, id, me, winner, loser)
		if otherEarlier {
			continue
		}
		m.set("", nil, nil, false) // the loser detached its attachment
		if dev, err := p.Attached(ctx, id); dev != want || err != nil {
			t.Errorf("the winner, once the loser detached: Attached = %q, %v; want %s", dev, err, want)
		}
	}
}
