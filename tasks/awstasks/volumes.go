package awstasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// Volumes claims EBS volumes for the instance protokube runs on. It is a volumetasks.Provider.
//
// The attachment is the claim, and EC2 decides races: AttachVolume of a volume attached to another instance fails
// with VolumeInUse, and the volume is held (a volumetasks.HeldError naming that instance and its addresses). A
// volume with Multi-Attach (io2) can be attached to several instances at once, when they attach it at the same
// moment (each saw it free): it is a volumetasks.Contested volume, whose earliest attachment (EC2's AttachTime;
// at the same time, the lowest instance id; one that is detaching never) wins, on every instance alike. List
// names the winner as the holder and the others as AlsoAttached. The winner neither formats nor mounts it while
// another attachment exists (Attached is a not-ready volumetasks.ContestedError); a loser detaches its own
// attachment (DetachLost), once no mount of this machine's mount table is its device (by device number or by any
// of its names: its NVMe link and what it resolves to, its attachment's device name in both spellings) and the
// device is not held open exclusively. A volume attached to instances that are not this one is never attached
// here. A volume is attached under a device name this instance does not use, /dev/xvdf to /dev/xvdz (the next is
// tried when EC2 refuses one as in use); once EC2 says "attached", the device is found on this machine: an NVMe
// instance (Nitro) shows the volume as /dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol<id without its dash>,
// a Xen one under the attachment's device name. Until the device appears, the attachment is not ready.
//
// Volumes of every zone of the region are listed (protokube points the API's names at the holders of every
// zone's member volumes); an EBS volume attaches to an instance of its zone only, and Attach refuses another
// zone's.
type Volumes struct {
	client *ec2.Client
	me     volumetasks.Holder
	zone   string
	root   string
	// mountTable is where DetachLost reads what is mounted (volumetasks.ProcMountTable).
	mountTable string

	// pollFirst and pollMax bound the backoff of the polls that wait for an attachment.
	pollFirst, pollMax time.Duration
	// attaching serialises the choice of device names on this instance (a semaphore, so that a waiter can give
	// up when its context ends).
	attaching chan struct{}

	// listed is each volume as the last List read it, kept until Attached takes it: the Finds of a protokube
	// round read the volumes the round began by listing (one DescribeVolumes for the round) rather than ask EC2
	// once more each. An entry serves one Attached only, so that a Find the engine runs again (a retry) asks EC2;
	// Attach and Detach always ask EC2, and drop the volume's entry. NewRun forgets them all.
	mu     sync.Mutex
	listed map[string]types.Volume
}

var (
	_ volumetasks.Provider  = (*Volumes)(nil)
	_ volumetasks.Contested = (*Volumes)(nil)
)

// VolumesOptions adjust a Volumes.
type VolumesOptions struct {
	// Root is the node's filesystem root, where /dev is looked at ("" = "/").
	Root string
	// MountTable is the mount table, in proc(5)'s mountinfo format ("" = volumetasks.ProcMountTable): what is
	// mounted on this machine, which a losing attachment's device must not be before it is detached.
	MountTable string
}

// deviceNames are the names volumes are attached under, in the order they are tried: the range EC2 recommends
// for EBS volumes on Linux, clear of the root device and instance stores.
var deviceNames = func() []string {
	var names []string
	for c := 'f'; c <= 'z'; c++ {
		names = append(names, "/dev/xvd"+string(c))
	}
	return names
}()

// NewVolumes returns the provider of the instance me (me.NodeID is its instance id, the addresses are what its
// claims publish) in availability zone zone. Nothing is asked of EC2 yet.
func NewVolumes(client *ec2.Client, me volumetasks.Holder, zone string, o VolumesOptions) *Volumes {
	root := o.Root
	if root == "" {
		root = "/"
	}
	mountTable := o.MountTable
	if mountTable == "" {
		mountTable = volumetasks.ProcMountTable
	}
	return &Volumes{
		client: client, me: me, zone: zone, root: root, mountTable: mountTable,
		pollFirst: time.Second, pollMax: 10 * time.Second,
		attaching: make(chan struct{}, 1),
	}
}

// Node returns this instance.
func (v *Volumes) Node() volumetasks.Holder { return v.me }

// NewRun forgets what the former run listed: protokube calls it at the start of each round.
func (v *Volumes) NewRun() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.listed = nil
}

// take returns volume id as the last List read it, once, and forgets it.
func (v *Volumes) take(id string) (types.Volume, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	vol, ok := v.listed[id]
	delete(v.listed, id)
	return vol, ok
}

// forget drops what the last List read of volume id: it is about to change.
func (v *Volumes) forget(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.listed, id)
}

// List returns the volumes of the region that carry every tag of filter (any value where the filter's is ""),
// sorted by id, each with its zone and the instance it is attached to (attaching, attached or detaching) as its
// holder.
func (v *Volumes) List(ctx context.Context, filter map[string]string) ([]volumetasks.Volume, error) {
	var filters []types.Filter
	for _, k := range slices.Sorted(maps.Keys(filter)) {
		if val := filter[k]; val == "" {
			filters = append(filters, types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			filters = append(filters, types.Filter{Name: aws.String("tag:" + k), Values: []string{val}})
		}
	}
	v.NewRun()
	var found []types.Volume
	p := ec2.NewDescribeVolumesPaginator(v.client, &ec2.DescribeVolumesInput{Filters: filters})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, Classify("listing the EBS volumes", err)
		}
		found = append(found, out.Volumes...)
	}
	var others []string
	for _, vol := range found {
		others = append(others, v.others(vol)...)
	}
	holders, err := v.instances(ctx, others)
	if err != nil {
		return nil, err
	}
	vols := make([]volumetasks.Volume, 0, len(found))
	for _, vol := range found {
		out := volumetasks.Volume{ID: aws.ToString(vol.VolumeId), Zone: aws.ToString(vol.AvailabilityZone), Tags: map[string]string{}}
		for _, t := range vol.Tags {
			out.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		for i, a := range ranked(vol) {
			h := v.holder(holders, aws.ToString(a.InstanceId))
			if i == 0 {
				out.Holder = &h
			} else {
				out.AlsoAttached = append(out.AlsoAttached, h)
			}
		}
		vols = append(vols, out)
	}
	slices.SortFunc(vols, func(a, b volumetasks.Volume) int { return strings.Compare(a.ID, b.ID) })
	listed := make(map[string]types.Volume, len(found))
	for _, vol := range found {
		listed[aws.ToString(vol.VolumeId)] = vol
	}
	v.mu.Lock()
	v.listed = listed
	v.mu.Unlock()
	return vols, nil
}

// live reports whether attachment a holds its volume: attaching, attached or detaching (the volume is not free
// until EC2 says it is detached).
func live(a types.VolumeAttachment) bool {
	return a.State != types.VolumeAttachmentStateDetached && aws.ToString(a.InstanceId) != ""
}

// mine returns this instance's live attachment of vol, or nil.
func (v *Volumes) mine(vol types.Volume) *types.VolumeAttachment {
	for i, a := range vol.Attachments {
		if live(a) && aws.ToString(a.InstanceId) == v.me.NodeID {
			return &vol.Attachments[i]
		}
	}
	return nil
}

// others returns the instances other than this one that hold vol, winner first (ranked): more than one, or one
// while this instance holds it too, only for a volume with Multi-Attach.
func (v *Volumes) others(vol types.Volume) []string {
	var ids []string
	for _, a := range ranked(vol) {
		if id := aws.ToString(a.InstanceId); id != v.me.NodeID {
			ids = append(ids, id)
		}
	}
	return ids
}

// contestRule is how ranked orders the attachments of a volume attached to several instances at once.
const contestRule = "the earliest attachment by EC2's AttachTime keeps a volume (one that is detaching never does), at the same time the lowest instance id"

// ranked returns the live attachments of vol, one per instance, winner first: those that are detaching last
// (they are going), then by EC2's AttachTime, the earliest first (an attachment without one last), then by
// instance id. Every instance that reads the volume ranks them alike: the order is the cloud's, not the reader's.
func ranked(vol types.Volume) []types.VolumeAttachment {
	var out []types.VolumeAttachment
	for _, a := range vol.Attachments {
		if live(a) && !slices.ContainsFunc(out, func(b types.VolumeAttachment) bool { return aws.ToString(b.InstanceId) == aws.ToString(a.InstanceId) }) {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b types.VolumeAttachment) int {
		aGoing, bGoing := a.State == types.VolumeAttachmentStateDetaching, b.State == types.VolumeAttachmentStateDetaching
		switch {
		case aGoing != bGoing:
			if aGoing {
				return 1
			}
			return -1
		case a.AttachTime == nil && b.AttachTime != nil:
			return 1
		case a.AttachTime != nil && b.AttachTime == nil:
			return -1
		case a.AttachTime != nil && !a.AttachTime.Equal(*b.AttachTime):
			return a.AttachTime.Compare(*b.AttachTime)
		}
		return strings.Compare(aws.ToString(a.InstanceId), aws.ToString(b.InstanceId))
	})
	return out
}

// holder is instance id as a claim names it: this instance as the provider was given it, another with the
// addresses DescribeInstances gave (none when it is gone).
func (v *Volumes) holder(known map[string]volumetasks.Holder, id string) volumetasks.Holder {
	if id == v.me.NodeID {
		return v.me
	}
	if h, ok := known[id]; ok {
		return h
	}
	return volumetasks.Holder{NodeID: id}
}

// instances returns the holders of instance ids, with their private and public addresses, in as few
// DescribeInstances calls as filters allow. An instance EC2 no longer knows is left out.
func (v *Volumes) instances(ctx context.Context, ids []string) (map[string]volumetasks.Holder, error) {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	holders := map[string]volumetasks.Holder{}
	for chunk := range slices.Chunk(ids, 200) { // a filter takes at most 200 values
		p := ec2.NewDescribeInstancesPaginator(v.client, &ec2.DescribeInstancesInput{
			Filters: []types.Filter{{Name: aws.String("instance-id"), Values: chunk}},
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, Classify("describing the instances that hold EBS volumes", err)
			}
			for _, r := range out.Reservations {
				for _, i := range r.Instances {
					id := aws.ToString(i.InstanceId)
					holders[id] = volumetasks.Holder{NodeID: id, InternalIP: aws.ToString(i.PrivateIpAddress), ExternalIP: aws.ToString(i.PublicIpAddress)}
				}
			}
		}
	}
	return holders, nil
}

// describe returns volume id as EC2 sees it now.
func (v *Volumes) describe(ctx context.Context, id, doing string) (types.Volume, error) {
	out, err := v.client.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
	if err != nil {
		return types.Volume{}, Classify(doing, err)
	}
	if len(out.Volumes) != 1 {
		return types.Volume{}, engine.NotReady(fmt.Errorf("%s: EC2 answered %d volumes for %s", doing, len(out.Volumes), id))
	}
	return out.Volumes[0], nil
}

// Attach attaches volume id to this instance, unless it is already, and returns its device on this machine. A
// volume attached to another instance is a *volumetasks.HeldError.
func (v *Volumes) Attach(ctx context.Context, id string) (string, error) {
	doing := fmt.Sprintf("attaching EBS volume %s to instance %s", id, v.me.NodeID)
	v.forget(id)
	vol, err := v.describe(ctx, id, doing)
	if err != nil {
		return "", err
	}
	if z := aws.ToString(vol.AvailabilityZone); z != v.zone {
		return "", engine.Terminal(fmt.Errorf("%s: the volume is in zone %s, the instance in %s: a volume attaches to an instance of its zone only", doing, z, v.zone))
	}
	if err := v.heldOrContested(ctx, vol); err != nil {
		return "", err
	}
	if v.mine(vol) == nil {
		if err := v.attach(ctx, id, doing); err != nil {
			return "", err
		}
	}
	device, err := v.waitAttached(ctx, id, doing)
	if err != nil {
		return "", err
	}
	return v.device(id, device, doing)
}

// attach calls AttachVolume under the first device name this instance does not use, and the next one while EC2
// says a name is in use.
func (v *Volumes) attach(ctx context.Context, id, doing string) error {
	select {
	case v.attaching <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", doing, ctx.Err())
	}
	defer func() { <-v.attaching }()
	used, err := v.usedDevices(ctx)
	if err != nil {
		return err
	}
	var refused []string
	for _, name := range deviceNames {
		if used[name] {
			continue
		}
		_, err := v.client.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(id), InstanceId: aws.String(v.me.NodeID), Device: aws.String(name)})
		switch ErrorCode(err) {
		case "":
			if err != nil {
				return Classify(doing, err)
			}
			return nil
		case "InvalidParameterValue": // the name is taken after all (an attachment DescribeInstances did not show yet)
			refused = append(refused, name)
			continue
		case "VolumeInUse":
			vol, derr := v.describe(ctx, id, doing)
			if derr != nil {
				return derr
			}
			if err := v.heldOrContested(ctx, vol); err != nil {
				return err
			} else if v.mine(vol) != nil {
				return nil // attached here already: a former try got through
			}
			return engine.NotReady(Classify(doing+" (EC2 says it is in use, and shows no attachment yet)", err))
		case "IncorrectState", "IncorrectInstanceState":
			return engine.NotReady(Classify(doing, err))
		default:
			return Classify(doing, err)
		}
	}
	return engine.Terminal(fmt.Errorf("%s: no device name is free on the instance (%s in use; EC2 refused %s): detach a volume from it",
		doing, strings.Join(slices.Sorted(maps.Keys(used)), ", "), strings.Join(refused, ", ")))
}

// usedDevices are the device names of this instance's block devices, in both spellings (/dev/sdf is /dev/xvdf).
func (v *Volumes) usedDevices(ctx context.Context) (map[string]bool, error) {
	out, err := v.client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{v.me.NodeID}})
	if err != nil {
		return nil, Classify("describing instance "+v.me.NodeID+" for its device names", err)
	}
	used := map[string]bool{}
	add := func(name string) {
		if name == "" {
			return
		}
		used[name] = true
		if rest, ok := strings.CutPrefix(name, "/dev/sd"); ok {
			used["/dev/xvd"+rest] = true
		}
		if rest, ok := strings.CutPrefix(name, "/dev/xvd"); ok {
			used["/dev/sd"+rest] = true
		}
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			add(aws.ToString(i.RootDeviceName))
			for _, b := range i.BlockDeviceMappings {
				add(aws.ToString(b.DeviceName))
			}
		}
	}
	return used, nil
}

// heldOrContested is the error of vol attached to other instances: held by them (a *volumetasks.HeldError)
// when this instance has no attachment of it, contested (a *volumetasks.ContestedError, not ready when this
// instance won it, terminal when it lost) when it has one. nil when no other instance holds it.
func (v *Volumes) heldOrContested(ctx context.Context, vol types.Volume) error {
	id := aws.ToString(vol.VolumeId)
	others := v.others(vol)
	switch {
	case len(others) == 0:
		return nil
	case v.mine(vol) == nil:
		return v.held(ctx, id, others)
	}
	return v.contested(ctx, vol).Classified()
}

// held is the error of volume id held by the instances others (at least one), not this one: its holder is the
// winner of them, and its fix names them all.
func (v *Volumes) held(ctx context.Context, id string, others []string) error {
	h := volumetasks.Holder{NodeID: others[0]}
	if known, err := v.instances(ctx, others[:1]); err == nil {
		h = v.holder(known, others[0])
	}
	fix := fmt.Sprintf("detach it from instance %s (aws ec2 detach-volume --volume-id %s) if that instance is gone for good", others[0], id)
	if len(others) > 1 {
		fix = fmt.Sprintf("it is attached to %d instances at once (EBS Multi-Attach): %s; kubeup neither formats nor mounts a volume "+
			"attached to more than one instance: detach it from every instance but the one that should serve it "+
			"(aws ec2 detach-volume --volume-id %s --instance-id ID)", len(others), strings.Join(others, ", "), id)
	}
	return &volumetasks.HeldError{VolumeID: id, Holder: h, Fix: fix}
}

// contested is vol, attached to this instance and to others (EBS Multi-Attach), as a ContestedError: the
// winner by ranked, the others with their addresses (as far as DescribeInstances tells them), and how a person
// ends it by hand.
func (v *Volumes) contested(ctx context.Context, vol types.Volume) *volumetasks.ContestedError {
	id := aws.ToString(vol.VolumeId)
	known, err := v.instances(ctx, v.others(vol))
	if err != nil {
		known = nil // for the message only: the instance ids say enough
	}
	e := &volumetasks.ContestedError{VolumeID: id, Node: v.me.NodeID, Rule: contestRule}
	var losers []string
	for i, a := range ranked(vol) {
		h := v.holder(known, aws.ToString(a.InstanceId))
		if i == 0 {
			e.Winner = h
			continue
		}
		e.Losers = append(e.Losers, h)
		losers = append(losers, h.NodeID)
	}
	e.Fix = fmt.Sprintf("it is attached to several instances at once (EBS Multi-Attach); by hand: aws ec2 detach-volume --volume-id %s --instance-id ID, for ID in %s",
		id, strings.Join(losers, " "))
	return e
}

// waitAttached polls DescribeVolumes until the volume's attachment to this instance is "attached", and returns
// its device name.
func (v *Volumes) waitAttached(ctx context.Context, id, doing string) (string, error) {
	delay := v.pollFirst
	for {
		vol, err := v.describe(ctx, id, doing)
		if err != nil {
			return "", err
		}
		a := v.mine(vol)
		if err := v.heldOrContested(ctx, vol); err != nil {
			return "", err
		}
		switch {
		case a == nil:
			return "", engine.NotReady(fmt.Errorf("%s: EC2 shows no attachment any more", doing))
		case a.State == types.VolumeAttachmentStateAttached:
			return aws.ToString(a.Device), nil
		case a.State == types.VolumeAttachmentStateDetaching:
			return "", engine.NotReady(fmt.Errorf("%s: the volume is detaching from this instance", doing))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("%s: waiting for the attachment (%s): %w", doing, a.State, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, v.pollMax)
	}
}

// nvmeLink is where an NVMe instance shows EBS volume id: the volume id without its dash is the device's serial.
func nvmeLink(id string) string {
	return "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_" + strings.ReplaceAll(id, "-", "")
}

// device returns the device of volume id, attached as name, on this machine: its NVMe link resolved, else name
// (or its /dev/xvd spelling of a /dev/sd name). Not there yet: not ready.
func (v *Volumes) device(id, name, doing string) (string, error) {
	link := filepath.Join(v.root, nvmeLink(id))
	if dev, err := filepath.EvalSymlinks(link); err == nil {
		return dev, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: resolving %s: %w", doing, link, err)
	}
	candidates := []string{name}
	if rest, ok := strings.CutPrefix(name, "/dev/sd"); ok {
		candidates = append(candidates, "/dev/xvd"+rest)
	}
	for _, c := range candidates {
		p := filepath.Join(v.root, c)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", engine.NotReady(fmt.Errorf("%s: EC2 says it is attached as %s, but neither %s nor %s is on this machine yet",
		doing, name, filepath.Join(v.root, nvmeLink(id)), filepath.Join(v.root, name)))
}

// Attached returns the device of volume id when it is attached to this instance; "" when it is not (or still
// attaching). Attached here but without its device on this machine yet is not ready. Attached here and to another
// instance too (Multi-Attach) is a *volumetasks.ContestedError naming them: the volume must not be mounted; not
// ready when this instance won it (the others detach theirs), terminal when it lost it. The volume is as the last
// List read it when that has not served an Attached yet (see listed), else as EC2 describes it now.
func (v *Volumes) Attached(ctx context.Context, id string) (string, error) {
	doing := fmt.Sprintf("looking for EBS volume %s on instance %s", id, v.me.NodeID)
	vol, ok := v.take(id)
	if !ok {
		var err error
		if vol, err = v.describe(ctx, id, doing); err != nil {
			return "", err
		}
	}
	a := v.mine(vol)
	if a == nil || a.State != types.VolumeAttachmentStateAttached {
		return "", nil
	}
	if err := v.heldOrContested(ctx, vol); err != nil {
		return "", fmt.Errorf("%s: %w", doing, err)
	}
	return v.device(id, aws.ToString(a.Device), doing)
}

// Detach detaches volume id from this instance and waits until EC2 says it is detached. A volume attached
// elsewhere, or nowhere, is left alone; another instance's attachment of a volume attached here too stays.
func (v *Volumes) Detach(ctx context.Context, id string) error {
	doing := fmt.Sprintf("detaching EBS volume %s from instance %s", id, v.me.NodeID)
	v.forget(id)
	vol, err := v.describe(ctx, id, doing)
	if err != nil {
		return err
	}
	if v.mine(vol) == nil {
		return nil
	}
	return v.detach(ctx, id, doing)
}

// detach detaches volume id from this instance, and waits until EC2 says it is detached.
func (v *Volumes) detach(ctx context.Context, id, doing string) error {
	_, err := v.client.DetachVolume(ctx, &ec2.DetachVolumeInput{VolumeId: aws.String(id), InstanceId: aws.String(v.me.NodeID)})
	switch ErrorCode(err) {
	case "IncorrectState", "InvalidAttachment.NotFound": // detached meanwhile
	default:
		if err != nil {
			return Classify(doing, err)
		}
	}
	delay := v.pollFirst
	for {
		vol, err := v.describe(ctx, id, doing)
		if err != nil {
			return err
		}
		if v.mine(vol) == nil {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: waiting for the detachment: %w", doing, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, v.pollMax)
	}
}

// Lost returns this instance's attachment of volume id when another instance's attachment won the volume
// (ranked), with the names its device has on this machine and what uses it; nil when this instance has no
// attachment of it, or won it, or is its only holder. The volume is as the last List read it when that has not
// served an Attached or a Lost yet, else as EC2 describes it now.
func (v *Volumes) Lost(ctx context.Context, id string) (*volumetasks.Loss, error) {
	doing := fmt.Sprintf("looking for a losing attachment of EBS volume %s on instance %s", id, v.me.NodeID)
	vol, ok := v.take(id)
	if !ok {
		var err error
		if vol, err = v.describe(ctx, id, doing); err != nil {
			return nil, err
		}
	}
	return v.loss(ctx, vol, doing)
}

// loss is Lost of vol as read.
func (v *Volumes) loss(ctx context.Context, vol types.Volume, doing string) (*volumetasks.Loss, error) {
	a := v.mine(vol)
	if a == nil || len(v.others(vol)) == 0 {
		return nil, nil
	}
	c := v.contested(ctx, vol)
	if c.Won() {
		return nil, nil
	}
	id := aws.ToString(vol.VolumeId)
	l := &volumetasks.Loss{VolumeID: id, Winner: c.Winner,
		Fix: fmt.Sprintf("aws ec2 detach-volume --volume-id %s --instance-id %s", id, v.me.NodeID)}
	use, found, err := volumetasks.DevicesInUse(v.mountTable, v.deviceNames(id, aws.ToString(a.Device)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", doing, err)
	}
	l.Devices, l.Use = found, use
	return l, nil
}

// deviceNames are every name volume id, attached to this instance as name, may have on this machine: its NVMe
// link, and name in both spellings (/dev/sdf is /dev/xvdf).
func (v *Volumes) deviceNames(id, name string) []string {
	out := []string{filepath.Join(v.root, nvmeLink(id))}
	if name == "" {
		return out
	}
	out = append(out, filepath.Join(v.root, name))
	if rest, ok := strings.CutPrefix(name, "/dev/sd"); ok {
		out = append(out, filepath.Join(v.root, "/dev/xvd"+rest))
	}
	if rest, ok := strings.CutPrefix(name, "/dev/xvd"); ok {
		out = append(out, filepath.Join(v.root, "/dev/sd"+rest))
	}
	return out
}

// DetachLost detaches this instance's attachment of volume id when, as EC2 describes the volume now, another
// instance's attachment won it and nothing on this machine uses its device (volumetasks.Loss.Refusal), and waits
// until EC2 says it is detached. An attachment that did not lose is left as it is; an attachment still
// attaching is not ready (EC2 detaches an attached volume).
func (v *Volumes) DetachLost(ctx context.Context, id string) error {
	doing := fmt.Sprintf("detaching EBS volume %s, which another instance won, from instance %s", id, v.me.NodeID)
	v.forget(id)
	vol, err := v.describe(ctx, id, doing)
	if err != nil {
		return err
	}
	l, err := v.loss(ctx, vol, doing)
	switch {
	case err != nil:
		return err
	case l == nil:
		engine.Logger(ctx).Info("kept an attachment: it did not lose the volume (any more)", "volume", id)
		return nil
	}
	switch a := v.mine(vol); a.State {
	case types.VolumeAttachmentStateAttaching:
		return engine.NotReady(fmt.Errorf("%s: the attachment is still attaching", doing))
	case types.VolumeAttachmentStateDetaching:
		return v.detach(ctx, id, doing)
	}
	if err := l.Refusal(); err != nil {
		return err
	}
	return v.detach(ctx, id, doing)
}
