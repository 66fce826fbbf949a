package gcetasks

import (
	"context"
	"fmt"
	"kubeup.dev/kubeup/internal/gcelabels"
	"maps"
	"strings"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
)

// Disk is a zonal persistent disk the cluster owns, such as the one that holds an etcd member's data. It is
// found by name among the disks of its zone that carry the cluster's ownership label. Its key is "Disk/<Name>".
//
// A create carries a requestId derived from the cluster and the name, so that a create repeated after a crash
// (the first one made the disk, its answer was lost) never makes a second disk.
type Disk struct {
	// Name is the disk's name, a GCE resource name: "a-etcd-main-gce-example-com" (see ResourceName).
	Name string
	// Zone is the zone ("us-central1-a"). Required; cannot change.
	Zone *string
	// SizeGB is the size in GB. Required to create; it may grow, never shrink.
	SizeGB *int64
	// Type is the disk type ("pd-ssd", "pd-balanced"); nil: GCE's default. Cannot change.
	Type *string
	// Labels are the labels the disk carries besides ClusterLabels, which kubeup always adds (encode kubeup's
	// tags with EncodeTags). Labels with kubeup's prefixes ("kubeup-") that the task does not ask for are
	// removed, but FormatIntentLabel (managedLabel); other labels are left alone.
	Labels map[string]string `kubeup:"nilempty"`

	// SelfLink is the disk's URL (output).
	SelfLink *string `kubeup:"output"`

	fingerprint string            // the found disk's labelFingerprint
	rawLabels   map[string]string // every label of the found disk
}

var (
	_ engine.Resource[*Disk, *Cloud] = (*Disk)(nil)
	_ engine.Renderer[*Disk, *Cloud] = (*Disk)(nil)
	_ engine.Classed                 = (*Disk)(nil)
)

func (d *Disk) Key() engine.Key     { return engine.Key{Type: "Disk", Name: d.Name} }
func (d *Disk) Deps() []engine.Task { return nil }
func (d *Disk) APIClass() string    { return "compute" }

// Find looks the disk up among the cluster's disks of its zone (one disks.list per zone and run).
func (d *Disk) Find(ctx context.Context, c *Cloud) (*Disk, error) {
	if d.Zone == nil || *d.Zone == "" {
		return nil, nil // CheckChanges says what is missing
	}
	all, err := c.disks(ctx, *d.Zone)
	if err != nil {
		return nil, err
	}
	found := all[d.Name]
	if found == nil {
		return nil, nil
	}
	zone := lastSegment(found.Zone)
	typ := lastSegment(found.Type)
	a := &Disk{
		Name:        found.Name,
		Zone:        &zone,
		SizeGB:      &found.SizeGb,
		Labels:      c.labelView(found.Labels, d.Labels),
		SelfLink:    &found.SelfLink,
		fingerprint: found.LabelFingerprint,
		rawLabels:   found.Labels,
	}
	if typ != "" {
		a.Type = &typ
	}
	return a, nil
}

// labelView is what of a resource's labels a task compares: the labels the task names, and every label with
// kubeup's prefix ("kubeup-", which a run removes when the task does not ask for it), without ClusterLabels.
func (c *Cloud) labelView(raw, want map[string]string) map[string]string {
	out := map[string]string{}
	own := gcelabels.ClusterLabels(c.Cluster)
	for k, v := range raw {
		if _, ok := own[k]; ok {
			continue
		}
		if _, ok := want[k]; ok || managedLabel(k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// managedLabel reports whether label key is kubeup's to remove from a resource when the task does not ask for it:
// kubeup's prefix ("kubeup-"), but FormatIntentLabel, which protokube puts on a disk and removes (Disks.BeginFormat,
// EndFormat): kubeup update must neither show it as a change nor remove it while a node formats the disk.
func managedLabel(key string) bool {
	return strings.HasPrefix(key, "kubeup-") && key != FormatIntentLabel
}

// desiredLabels are the labels a resource should carry: raw (what it has), without kubeup's labels the task
// does not ask for, with the task's labels and ClusterLabels.
func (c *Cloud) desiredLabels(raw, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range raw {
		if !managedLabel(k) {
			out[k] = v
		}
	}
	maps.Copy(out, want)
	maps.Copy(out, gcelabels.ClusterLabels(c.Cluster))
	return out
}

// CheckChanges requires Zone and SizeGB to create, and refuses to move the disk to another zone, to change its
// type, or to shrink it.
func (d *Disk) CheckChanges(actual, expected, changes *Disk) error {
	switch {
	case !gcelabels.ValidName(expected.Name):
		return fmt.Errorf("field Name of disk %q is not a GCE resource name (a lowercase letter, then up to 62 of a-z, 0-9 and '-', "+
			"not ending with '-')", expected.Name)
	case expected.Zone == nil || *expected.Zone == "":
		return fmt.Errorf("field Zone is required for disk %s", expected.Name)
	case expected.SizeGB != nil && *expected.SizeGB <= 0:
		return fmt.Errorf("field SizeGB of disk %s: %d is not a size: give a positive number of GB", expected.Name, *expected.SizeGB)
	}
	for k, v := range expected.Labels {
		if !gcelabels.LabelKeyRE.MatchString(k) || !gcelabels.LabelValueRE.MatchString(v) {
			return fmt.Errorf("field Labels of disk %s: %s=%s is not a GCE label (encode tags with EncodeTags)", expected.Name, k, v)
		}
	}
	if actual == nil {
		if expected.SizeGB == nil {
			return fmt.Errorf("field SizeGB is required to create disk %s", expected.Name)
		}
		return nil
	}
	if changes.Zone != nil {
		return fmt.Errorf("field Zone of disk %s cannot change from %s to %s: a disk stays in its zone; keep zone %s, or move the data "+
			"yourself (snapshot the disk, make a disk of the snapshot in %s, delete the old one) and run again",
			expected.Name, *actual.Zone, *expected.Zone, *actual.Zone, *expected.Zone)
	}
	if changes.Type != nil && actual.Type != nil {
		return fmt.Errorf("field Type of disk %s cannot change from %s to %s: keep type %s, or copy the data to a new disk yourself "+
			"and run again", expected.Name, *actual.Type, *expected.Type, *actual.Type)
	}
	if changes.SizeGB != nil && actual.SizeGB != nil && *expected.SizeGB < *actual.SizeGB {
		return fmt.Errorf("field SizeGB of disk %s cannot shrink from %d GB to %d GB: persistent disks only grow; set it to %d or more",
			expected.Name, *actual.SizeGB, *expected.SizeGB, *actual.SizeGB)
	}
	return nil
}

// Render creates the disk with its labels, or grows it (disks.resize) and reconciles its labels (disks.setLabels
// with the fingerprint Find read: a concurrent change of the labels fails it, and the retry reads them again).
func (d *Disk) Render(ctx context.Context, c *Cloud, actual, expected, changes *Disk) error {
	zone := *expected.Zone
	defer c.reads.disks.Of(zone).Forget()
	what := "disk " + expected.Name
	if actual == nil {
		return d.create(ctx, c, expected)
	}
	if changes.SizeGB != nil {
		op, err := c.Compute.Disks.Resize(c.Project, zone, expected.Name, &compute.DisksResizeRequest{SizeGb: *expected.SizeGB}).Context(ctx).Do()
		if err := c.mutate(ctx, "resizing "+what, op, err); err != nil {
			return err
		}
		engine.Logger(ctx).Info("resized disk", "name", expected.Name, "sizeGB", *expected.SizeGB)
	}
	if want := c.desiredLabels(actual.rawLabels, expected.Labels); !maps.Equal(want, actual.rawLabels) {
		op, err := c.Compute.Disks.SetLabels(c.Project, zone, expected.Name, &compute.ZoneSetLabelsRequest{
			Labels: want, LabelFingerprint: actual.fingerprint,
		}).Context(ctx).Do()
		err = c.mutate(ctx, "labelling "+what, op, err)
		if httpCode(err) == 412 { // the fingerprint is stale: someone changed the labels
			return engine.NotReady(fmt.Errorf("labelling %s: its labels changed since they were read: reading them again: %w", what, err))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *Disk) create(ctx context.Context, c *Cloud, expected *Disk) error {
	zone := *expected.Zone
	what := "disk " + expected.Name
	disk := &compute.Disk{
		Name:   expected.Name,
		SizeGb: *expected.SizeGB,
		Labels: c.desiredLabels(nil, expected.Labels),
	}
	if expected.Type != nil {
		disk.Type = fmt.Sprintf("projects/%s/zones/%s/diskTypes/%s", c.Project, zone, *expected.Type)
	}
	for attempt := 0; attempt < maxRequestAttempts; attempt++ {
		id := requestID(attempt, "Disk", c.Cluster, zone, expected.Name)
		op, err := c.Compute.Disks.Insert(c.Project, zone, disk).RequestId(id).Context(ctx).Do()
		err = c.mutate(ctx, "creating "+what, op, err)
		if isConflict(err) {
			return c.existingDisk(ctx, zone, expected.Name, err)
		}
		if err != nil {
			return err
		}
		// The operation may be an earlier one of this id, whose disk is gone since (a cluster of the name deleted
		// and made again): the disk is read to be sure.
		got, err := c.Compute.Disks.Get(c.Project, zone, expected.Name).Context(ctx).Do()
		if IsNotFound(err) {
			engine.Logger(ctx).Info("the request id belongs to a disk that is gone; trying the next one", "requestId", id)
			continue
		}
		if err != nil {
			return Classify("reading "+what+" after its creation", err)
		}
		expected.SelfLink = &got.SelfLink
		engine.Logger(ctx).Info("created disk", "name", expected.Name, "zone", zone)
		return nil
	}
	return engine.Terminal(fmt.Errorf("creating %s: its first %d request ids all answered with disks that are gone (clusters of this "+
		"name deleted and made again within the hour GCE keeps request ids): wait an hour and run again", what, maxRequestAttempts))
}

// existingDisk explains a disk of the name that a create found already there: the cluster's own (the list did
// not show it yet) is read again (NotReady); someone else's is an error waiting does not mend.
func (c *Cloud) existingDisk(ctx context.Context, zone, name string, dup error) error {
	got, err := c.Compute.Disks.Get(c.Project, zone, name).Context(ctx).Do()
	if err != nil && !IsNotFound(err) {
		return Classify("reading disk "+name, err)
	}
	if got != nil && !c.owns(got.Labels) {
		return engine.Terminal(fmt.Errorf("a disk named %s exists in zone %s and is not cluster %s's (no label %s=%s): rename the "+
			"disk or remove it: %w", name, zone, c.Cluster, gcelabels.ClusterLabelKey(c.Cluster), gcelabels.OwnedValue, dup))
	}
	return engine.NotReady(fmt.Errorf("disk %s exists already: reading it again: %w", name, dup))
}
