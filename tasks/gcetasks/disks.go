package gcetasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
// whose users are more than one instance (a multi-writer disk, or one attached read-only) is held by the others,
// whether or not this instance is one of them: it is never attached here, and one attached here already is not
// reported attached (Attached refuses it), so that nothing formats or mounts it. A disk
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
}

var _ volumetasks.Provider = (*Disks)(nil)

// DisksOptions adjust a Disks.
type DisksOptions struct {
	// Root is the node's filesystem root, where /dev is looked at ("" = "/").
	Root string
}

// NewDisks returns the provider of instance me (me.NodeID is the instance's name, the addresses are what its
// claims publish) in zone of project. Nothing is asked of GCE yet.
func NewDisks(svc *compute.Service, project, zone string, me volumetasks.Holder, o DisksOptions) *Disks {
	root := o.Root
	if root == "" {
		root = "/"
	}
	return &Disks{svc: svc, project: project, zone: zone, me: me, root: root}
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
	want, err := EncodeTags(exact)
	if err != nil {
		return nil, engine.Terminal(fmt.Errorf("listing the disks: %w", err))
	}
	clusters := ClustersOfTags(filter)
	var serverFilter string
	for _, c := range clusters {
		if filter[clusterTagPrefix+c] != "" {
			serverFilter = fmt.Sprintf("labels.%s = %q", ClusterLabelKey(c), LabelValue(filter[clusterTagPrefix+c]))
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
			tags := DecodeLabels(disk.Labels, clusters...)
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
		v := volumetasks.Volume{ID: disk.Name, Zone: lastSegment(disk.Zone), Tags: DecodeLabels(disk.Labels, clusters...)}
		if u := d.holding(disk); u != "" {
			h, err := d.holder(ctx, u)
			if err != nil {
				return nil, err
			}
			v.Holder = &h
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

// others are the URLs of the users of disk other than this instance: more than one, or one while this instance
// is a user too, only for a disk attached to several instances (multi-writer, or read-only).
func (d *Disks) others(disk *compute.Disk) []string {
	var out []string
	for _, u := range disk.Users {
		if lastSegment(u) != d.me.NodeID && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// holding is the user of disk that List reports as its holder: this instance when it is one (so that this
// instance's task for the disk finds it, and Attached refuses it when others use it too), else the first; ""
// when the disk is free.
func (d *Disks) holding(disk *compute.Disk) string {
	for _, u := range disk.Users {
		if lastSegment(u) == d.me.NodeID {
			return u
		}
	}
	if len(disk.Users) > 0 {
		return disk.Users[0]
	}
	return ""
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
		return "", d.held(ctx, disk, others, mine)
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
				return "", d.held(ctx, again, others, slices.Contains(users(again), d.me.NodeID))
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
			return "", d.held(ctx, again, others, true)
		}
	}
	return d.device(id, doing)
}

// held is the HeldError of disk, attached to the other instances of URLs others (at least one), and to this
// instance too when mineToo: its holder is the first of them, and its fix names them all.
func (d *Disks) held(ctx context.Context, disk *compute.Disk, others []string, mineToo bool) error {
	h, err := d.holder(ctx, others[0])
	if err != nil {
		return err
	}
	fix := fmt.Sprintf("if instance %s is gone for good, detach the disk: gcloud compute instances detach-disk %s --disk %s --zone %s",
		h.NodeID, h.NodeID, disk.Name, d.zone)
	if len(others) > 1 || mineToo {
		var all []string
		if mineToo {
			all = append(all, d.me.NodeID+" (this instance)")
		}
		for _, u := range others {
			all = append(all, lastSegment(u))
		}
		fix = fmt.Sprintf("it is attached to %d instances at once (a multi-writer disk, or attached read-only): %s; kubeup neither "+
			"formats nor mounts a disk attached to more than one instance: detach it from every instance but the one that should "+
			"serve it (gcloud compute instances detach-disk INSTANCE --disk %s --zone %s)", len(all), strings.Join(all, ", "), disk.Name, d.zone)
	}
	return engine.Terminal(&volumetasks.HeldError{VolumeID: disk.Name, Holder: h, Fix: fix})
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
// its device does not show. A disk attached here and to another instance too is a terminal *volumetasks.HeldError
// naming them: it must not be mounted.
func (d *Disks) Attached(ctx context.Context, id string) (string, error) {
	doing := fmt.Sprintf("reading disk %s", id)
	disk, err := d.get(ctx, id, doing)
	if err != nil {
		return "", err
	}
	if !slices.Contains(users(disk), d.me.NodeID) {
		return "", nil
	}
	if others := d.others(disk); len(others) > 0 {
		return "", fmt.Errorf("%s: %w", doing, d.held(ctx, disk, others, true))
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
