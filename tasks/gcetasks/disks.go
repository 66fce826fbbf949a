package gcetasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"kubeup.dev/kubeup/internal/gcelabels"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// Disks claims persistent disks for the instance protokube runs on. It is a volumetasks.Provider; a volume's
// id is the disk's name, and its tags are the disk's labels decoded (DecodeLabels).
//
// The attachment is the claim, and GCE decides races: attachDisk of a disk attached read-write to another
// instance fails, and the disk is held (a volumetasks.HeldError naming that instance and its addresses). A disk
// whose users are more than one instance (a multi-writer disk two instances attached at the same moment, or one
// attached read-only) is a volumetasks.Contested volume. GCE records no time per attachment (a disk's
// lastAttachTimestamp is its last attach, whoever made it, and the order of its users is not documented), so
// the user with the lowest instance name wins it, on every instance alike (the names of one zone's instances
// are unique). List names the winner as the holder and the others as AlsoAttached; the winner neither formats
// nor mounts it while another user is there (Attached is a not-ready volumetasks.ContestedError); a loser
// detaches its own attachment (DetachLost), once its device (by the attachment's device name: google-<name> and
// scsi-0Google_PersistentDisk_<name> under /dev/disk/by-id, and what they resolve to) is in no mount of this
// machine's mount table and not held open exclusively. A disk attached to instances that are not this one is
// never attached here. A disk
// is attached under the device name of its own name, so that it shows on this machine as
// /dev/disk/by-id/google-<name>; until that device appears, the attachment is not ready.
//
// The disks of every zone of this instance's region are listed (protokube points the API's names at the holders
// of every zone's member disks); a disk attaches to an instance of its zone only, and Attach looks in that zone.
type Disks struct {
	svc     *compute.Service
	project string
	zone    string
	me      volumetasks.Holder
	root    string
	// mountTable is where DetachLost reads what is mounted (volumetasks.ProcMountTable).
	mountTable string
}

var (
	_ volumetasks.Provider  = (*Disks)(nil)
	_ volumetasks.Contested = (*Disks)(nil)
)

// DisksOptions adjust a Disks.
type DisksOptions struct {
	// Root is the node's filesystem root, where /dev is looked at ("" = "/").
	Root string
	// MountTable is the mount table, in proc(5)'s mountinfo format ("" = volumetasks.ProcMountTable): what is
	// mounted on this machine, which a losing attachment's device must not be before it is detached.
	MountTable string
}

// NewDisks returns the provider of instance me (me.NodeID is the instance's name, the addresses are what its
// claims publish) in zone of project. Nothing is asked of GCE yet.
func NewDisks(svc *compute.Service, project, zone string, me volumetasks.Holder, o DisksOptions) *Disks {
	root := o.Root
	if root == "" {
		root = "/"
	}
	mountTable := o.MountTable
	if mountTable == "" {
		mountTable = volumetasks.ProcMountTable
	}
	return &Disks{svc: svc, project: project, zone: zone, me: me, root: root, mountTable: mountTable}
}

// Node returns this instance.
func (d *Disks) Node() volumetasks.Holder { return d.me }

// List returns the disks of the region's zones that carry every tag of filter (encoded as labels; any value where
// the filter's is ""), sorted by name, each with its zone and the instance it is attached to as its holder.
func (d *Disks) List(ctx context.Context, filter map[string]string) ([]volumetasks.Volume, error) {
	exact := map[string]string{}
	var anyValue []string
	for k, v := range filter {
		if v == "" {
			anyValue = append(anyValue, k)
		} else {
			exact[k] = v
		}
	}
	want, err := gcelabels.EncodeTags(exact)
	if err != nil {
		return nil, engine.Terminal(fmt.Errorf("listing the disks: %w", err))
	}
	clusters := gcelabels.ClustersOfTags(filter)
	var serverFilter string
	for _, c := range clusters {
		if filter[gcelabels.ClusterTagPrefix+c] != "" {
			serverFilter = fmt.Sprintf("labels.%s = %q", gcelabels.ClusterLabelKey(c), gcelabels.LabelValue(filter[gcelabels.ClusterTagPrefix+c]))
		}
	}
	var found []*compute.Disk
	region := regionOfZone(d.zone)
	call := d.svc.Disks.AggregatedList(d.project)
	if serverFilter != "" {
		call = call.Filter(serverFilter)
	}
	err = call.Pages(ctx, func(l *compute.DiskAggregatedList) error {
		var items []*compute.Disk
		for _, scoped := range l.Items {
			items = append(items, scoped.Disks...)
		}
	disks:
		for _, disk := range items {
			if regionOfZone(lastSegment(disk.Zone)) != region {
				continue
			}
			for k, v := range want {
				if disk.Labels[k] != v {
					continue disks
				}
			}
			tags := gcelabels.DecodeLabels(disk.Labels, clusters...)
			for _, k := range anyValue {
				if _, ok := tags[k]; !ok {
					continue disks
				}
			}
			found = append(found, disk)
		}
		return nil
	})
	if err != nil {
		return nil, Classify("listing the disks of region "+region, err)
	}
	vols := make([]volumetasks.Volume, 0, len(found))
	for _, disk := range found {
		v := volumetasks.Volume{ID: disk.Name, Zone: lastSegment(disk.Zone), Tags: gcelabels.DecodeLabels(disk.Labels, clusters...)}
		for i, u := range rankedUsers(disk) {
			h, err := d.holder(ctx, u)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				v.Holder = &h
			} else {
				v.AlsoAttached = append(v.AlsoAttached, h)
			}
		}
		vols = append(vols, v)
	}
	slices.SortFunc(vols, func(a, b volumetasks.Volume) int { return strings.Compare(a.ID, b.ID) })
	return vols, nil
}

// holder is the instance of URL user as a claim records it: this instance, or another read for its addresses.
func (d *Disks) holder(ctx context.Context, user string) (volumetasks.Holder, error) {
	name := lastSegment(user)
	if name == d.me.NodeID {
		return d.me, nil
	}
	h := volumetasks.Holder{NodeID: name}
	inst, err := d.svc.Instances.Get(d.project, zoneOf(user, d.zone), name).Context(ctx).Do()
	if IsNotFound(err) {
		return h, nil
	}
	if err != nil {
		return h, Classify("reading instance "+name, err)
	}
	if len(inst.NetworkInterfaces) > 0 {
		nic := inst.NetworkInterfaces[0]
		h.InternalIP = nic.NetworkIP
		if len(nic.AccessConfigs) > 0 {
			h.ExternalIP = nic.AccessConfigs[0].NatIP
		}
	}
	return h, nil
}

// regionOfZone is the region of a zone ("us-central1-a" → "us-central1").
func regionOfZone(zone string) string {
	if i := strings.LastIndex(zone, "-"); i > 0 {
		return zone[:i]
	}
	return zone
}

// zoneOf is the zone of a zonal resource URL, def when it names none.
func zoneOf(url, def string) string {
	parts := strings.Split(url, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "zones" {
			return parts[i+1]
		}
	}
	return def
}

// devicePath is where disk name shows on this machine.
func (d *Disks) devicePath(name string) string {
	return filepath.Join(d.root, "dev", "disk", "by-id", "google-"+name)
}

// users are the instance names disk is attached to.
func users(disk *compute.Disk) []string {
	var out []string
	for _, u := range disk.Users {
		out = append(out, lastSegment(u))
	}
	return out
}

// others are the URLs of the users of disk other than this instance, winner first (rankedUsers): more than one,
// or one while this instance is a user too, only for a disk attached to several instances (multi-writer, or
// read-only).
func (d *Disks) others(disk *compute.Disk) []string {
	var out []string
	for _, u := range rankedUsers(disk) {
		if lastSegment(u) != d.me.NodeID {
			out = append(out, u)
		}
	}
	return out
}

// contestRule is how rankedUsers orders the users of a disk attached to several instances at once.
const contestRule = "GCE records no time per attachment: the instance with the lowest name keeps a disk"

// rankedUsers returns the URLs of the users of disk, one per instance, winner first: by instance name. Every
// instance that reads the disk ranks them alike.
func rankedUsers(disk *compute.Disk) []string {
	var out []string
	for _, u := range disk.Users {
		if !slices.ContainsFunc(out, func(o string) bool { return lastSegment(o) == lastSegment(u) }) {
			out = append(out, u)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(lastSegment(a), lastSegment(b)) })
	return out
}

func (d *Disks) get(ctx context.Context, name, doing string) (*compute.Disk, error) {
	disk, err := d.svc.Disks.Get(d.project, d.zone, name).Context(ctx).Do()
	if err != nil {
		return nil, Classify(doing, err)
	}
	return disk, nil
}

// Attach attaches disk id to this instance, unless it is already, and returns its device on this machine.
func (d *Disks) Attach(ctx context.Context, id string) (string, error) {
	doing := fmt.Sprintf("attaching disk %s to instance %s", id, d.me.NodeID)
	disk, err := d.get(ctx, id, doing)
	if err != nil {
		return "", err
	}
	mine := slices.Contains(users(disk), d.me.NodeID)
	switch others := d.others(disk); {
	case len(others) > 0:
		return "", d.heldOrContested(ctx, disk)
	case mine:
	default:
		op, err := d.svc.Instances.AttachDisk(d.project, d.zone, d.me.NodeID, &compute.AttachedDisk{
			Source: disk.SelfLink, DeviceName: id, Mode: "READ_WRITE", Type: "PERSISTENT",
		}).Context(ctx).Do()
		if err == nil {
			err = waitOperation(ctx, d.svc, d.project, doing, op)
		} else {
			err = Classify(doing, err)
		}
		if err != nil {
			// Another instance may have won the race: the disk says who holds it.
			again, gerr := d.get(ctx, id, doing)
			if gerr != nil {
				if engine.ClassOf(gerr) == engine.ClassRetryable {
					// Whether the race was lost is not known yet: ask again rather than fail on it.
					return "", engine.Retryable(fmt.Errorf("%w (reading the disk again to see who holds it: %v)", err, gerr))
				}
				return "", err
			}
			if others := d.others(again); len(others) > 0 {
				return "", d.heldOrContested(ctx, again)
			}
			return "", err
		}
		engine.Logger(ctx).Info("attached disk", "disk", id, "instance", d.me.NodeID)
		// A multi-writer disk may have been attached by another instance at the same time (both saw it free): the
		// disk's users say, before its device is handed on to be formatted and mounted.
		again, err := d.get(ctx, id, doing)
		if err != nil {
			return "", err
		}
		if others := d.others(again); len(others) > 0 {
			return "", d.heldOrContested(ctx, again)
		}
	}
	return d.device(id, doing)
}

// heldOrContested is the error of disk used by other instances: held by them (a terminal
// *volumetasks.HeldError) when this instance is no user of it, contested (a *volumetasks.ContestedError, not
// ready when this instance won it, terminal when it lost) when it is one. nil when no other instance uses it.
func (d *Disks) heldOrContested(ctx context.Context, disk *compute.Disk) error {
	others := d.others(disk)
	switch {
	case len(others) == 0:
		return nil
	case !slices.Contains(users(disk), d.me.NodeID):
		return d.held(ctx, disk, others)
	}
	c, err := d.contested(ctx, disk)
	if err != nil {
		return err
	}
	return c.Classified()
}

// held is the HeldError of disk, attached to the other instances of URLs others (at least one), not to this
// one: its holder is the winner of them, and its fix names them all.
func (d *Disks) held(ctx context.Context, disk *compute.Disk, others []string) error {
	h, err := d.holder(ctx, others[0])
	if err != nil {
		return err
	}
	fix := fmt.Sprintf("if instance %s is gone for good, detach the disk: gcloud compute instances detach-disk %s --disk %s --zone %s",
		h.NodeID, h.NodeID, disk.Name, d.zone)
	if len(others) > 1 {
		var all []string
		for _, u := range others {
			all = append(all, lastSegment(u))
		}
		fix = fmt.Sprintf("it is attached to %d instances at once (a multi-writer disk, or attached read-only): %s; kubeup neither "+
			"formats nor mounts a disk attached to more than one instance: detach it from every instance but the one that should "+
			"serve it (gcloud compute instances detach-disk INSTANCE --disk %s --zone %s)", len(all), strings.Join(all, ", "), disk.Name, d.zone)
	}
	return engine.Terminal(&volumetasks.HeldError{VolumeID: disk.Name, Holder: h, Fix: fix})
}

// contested is disk, whose users are this instance and others, as a ContestedError: the winner by
// rankedUsers, the others with their addresses, and how a person ends it by hand.
func (d *Disks) contested(ctx context.Context, disk *compute.Disk) (*volumetasks.ContestedError, error) {
	e := &volumetasks.ContestedError{VolumeID: disk.Name, Node: d.me.NodeID, Rule: contestRule}
	var losers []string
	for i, u := range rankedUsers(disk) {
		h, err := d.holder(ctx, u)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			e.Winner = h
			continue
		}
		e.Losers = append(e.Losers, h)
		losers = append(losers, h.NodeID)
	}
	e.Fix = fmt.Sprintf("it is attached to several instances at once (a multi-writer disk, or attached read-only); by hand: "+
		"gcloud compute instances detach-disk INSTANCE --disk %s --zone %s, for INSTANCE in %s", disk.Name, d.zone, strings.Join(losers, " "))
	return e, nil
}

// device returns the device of disk id on this machine; NotReady until it shows.
func (d *Disks) device(id, doing string) (string, error) {
	p := d.devicePath(id)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", engine.NotReady(fmt.Errorf("%s: the disk is attached, and %s does not show yet", doing, p))
		}
		return "", fmt.Errorf("%s: %w", doing, err)
	}
	return p, nil
}

// Attached returns the device disk id is attached as on this machine; "" when this instance does not hold it or
// its device does not show. A disk attached here and to another instance too is a *volumetasks.ContestedError
// naming them: it must not be mounted; not ready when this instance won it (the others detach theirs), terminal
// when it lost it.
func (d *Disks) Attached(ctx context.Context, id string) (string, error) {
	doing := fmt.Sprintf("reading disk %s", id)
	disk, err := d.get(ctx, id, doing)
	if err != nil {
		return "", err
	}
	if !slices.Contains(users(disk), d.me.NodeID) {
		return "", nil
	}
	if err := d.heldOrContested(ctx, disk); err != nil {
		return "", fmt.Errorf("%s: %w", doing, err)
	}
	if _, err := os.Stat(d.devicePath(id)); err != nil {
		return "", nil
	}
	return d.devicePath(id), nil
}

// Detach detaches disk id from this instance; a disk this instance does not hold is left alone.
func (d *Disks) Detach(ctx context.Context, id string) error {
	doing := fmt.Sprintf("detaching disk %s from instance %s", id, d.me.NodeID)
	disk, err := d.get(ctx, id, doing)
	if err != nil {
		return err
	}
	if !slices.Contains(users(disk), d.me.NodeID) {
		return nil
	}
	op, err := d.svc.Instances.DetachDisk(d.project, d.zone, d.me.NodeID, id).Context(ctx).Do()
	if err != nil {
		return Classify(doing, err)
	}
	return waitOperation(ctx, d.svc, d.project, doing, op)
}

// Lost returns this instance's attachment of disk id when another user of the disk won it (rankedUsers), with
// the names its device has on this machine and what uses it; nil when this instance is no user of the disk, or
// won it, or is its only user.
func (d *Disks) Lost(ctx context.Context, id string) (*volumetasks.Loss, error) {
	doing := fmt.Sprintf("looking for a losing attachment of disk %s on instance %s", id, d.me.NodeID)
	disk, err := d.get(ctx, id, doing)
	if err != nil {
		return nil, err
	}
	l, _, err := d.loss(ctx, disk, doing)
	return l, err
}

// loss is Lost of disk as read, and the device name of this instance's attachment.
func (d *Disks) loss(ctx context.Context, disk *compute.Disk, doing string) (*volumetasks.Loss, string, error) {
	if !slices.Contains(users(disk), d.me.NodeID) || len(d.others(disk)) == 0 {
		return nil, "", nil
	}
	c, err := d.contested(ctx, disk)
	if err != nil || c.Won() {
		return nil, "", err
	}
	// The device shows under the attachment's device name, which an attachment made by hand may have chosen.
	inst, err := d.svc.Instances.Get(d.project, d.zone, d.me.NodeID).Context(ctx).Do()
	if err != nil {
		return nil, "", Classify(doing+": reading this instance's disks", err)
	}
	i := slices.IndexFunc(inst.Disks, func(ad *compute.AttachedDisk) bool { return ad.Source == disk.SelfLink })
	if i < 0 {
		return nil, "", engine.NotReady(fmt.Errorf("%s: the disk names this instance as a user, and the instance does not show it yet", doing))
	}
	dev := inst.Disks[i].DeviceName
	l := &volumetasks.Loss{VolumeID: disk.Name, Winner: c.Winner,
		Fix: fmt.Sprintf("gcloud compute instances detach-disk %s --disk %s --zone %s", d.me.NodeID, disk.Name, d.zone)}
	byID := filepath.Join(d.root, "dev", "disk", "by-id")
	use, found, err := volumetasks.DevicesInUse(d.mountTable, []string{
		filepath.Join(byID, "google-"+dev), filepath.Join(byID, "scsi-0Google_PersistentDisk_"+dev)})
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", doing, err)
	}
	l.Devices, l.Use = found, use
	return l, dev, nil
}

// DetachLost detaches this instance's attachment of disk id when, as GCE describes the disk now, another user
// won it and nothing on this machine uses its device (volumetasks.Loss.Refusal), and waits for the operation.
// An attachment that did not lose is left as it is.
func (d *Disks) DetachLost(ctx context.Context, id string) error {
	doing := fmt.Sprintf("detaching disk %s, which another instance won, from instance %s", id, d.me.NodeID)
	disk, err := d.get(ctx, id, doing)
	if err != nil {
		return err
	}
	l, dev, err := d.loss(ctx, disk, doing)
	switch {
	case err != nil:
		return err
	case l == nil:
		engine.Logger(ctx).Info("kept an attachment: it did not lose the disk (any more)", "disk", id)
		return nil
	}
	if err := l.Refusal(); err != nil {
		return err
	}
	op, err := d.svc.Instances.DetachDisk(d.project, d.zone, d.me.NodeID, dev).Context(ctx).Do()
	if err != nil {
		return Classify(doing, err)
	}
	return waitOperation(ctx, d.svc, d.project, doing, op)
}
