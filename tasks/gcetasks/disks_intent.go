package gcetasks

import (
	"context"
	"fmt"
	"kubeup.dev/kubeup/internal/gcelabels"
	"maps"
	"net/http"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// FormatIntentLabel is the label a node puts on a disk before it formats it, and removes once the filesystem is
// made and before it mounts it; its value is the node's instance name (intentValue). A disk that carries it was
// never mounted since: what an interrupted mkfs left on it is formatted again by whichever instance holds it next
// (volumetasks.FormatIntents).
const FormatIntentLabel = "kubeup-format-intent"

// unnamedNode is what FormatIntent answers for an intent label whose value is empty (not one kubeup wrote): an
// intent all the same.
const unnamedNode = "(unnamed node)"

// intentAttempts bounds the disks.setLabels tried when the disk's labels change between the read and the write
// (412 conditionNotMet: the fingerprint is stale); then the engine tries again later.
const intentAttempts = 4

var _ volumetasks.FormatIntents = (*Disks)(nil)

// intentValue is node as the intent label's value: the instance name itself, which GCE's instance names (a
// lowercase letter, then up to 62 of a-z, 0-9 and '-') always are as label values; any other name (not one GCE
// gives) becomes LabelValue of its first 54 characters, '-' and the first 8 hex digits of its SHA-256, so that
// two such names stay apart and the value fits in 63 characters.
func intentValue(node string) string {
	if node != "" && gcelabels.LabelValueRE.MatchString(node) {
		return node
	}
	v := gcelabels.LabelValue(node)
	if len(v) > 54 {
		v = v[:54]
	}
	return v + "-" + gcelabels.Hash8(node)
}

// FormatIntent returns the value of disk id's FormatIntentLabel (the instance that began formatting it), "" when
// the disk does not carry it: one disks.get.
func (d *Disks) FormatIntent(ctx context.Context, id string) (string, error) {
	disk, err := d.get(ctx, id, fmt.Sprintf("reading label %s of disk %s", FormatIntentLabel, id))
	if err != nil {
		return "", err
	}
	node, ok := disk.Labels[FormatIntentLabel]
	switch {
	case !ok:
		return "", nil
	case node == "":
		return unnamedNode, nil
	}
	return node, nil
}

// BeginFormat labels disk id FormatIntentLabel=<this instance> (replacing another instance's value), keeping every
// other label. The intent is durable once the setLabels operation is DONE, which BeginFormat waits for.
func (d *Disks) BeginFormat(ctx context.Context, id string) error {
	value := intentValue(d.me.NodeID)
	doing := fmt.Sprintf("labelling disk %s %s=%s before formatting it (compute.disks.setLabels)", id, FormatIntentLabel, value)
	return d.relabel(ctx, id, doing, func(labels map[string]string) bool {
		if v, ok := labels[FormatIntentLabel]; ok && v == value {
			return false // recorded already (a former try whose answer was lost)
		}
		labels[FormatIntentLabel] = value
		return true
	})
}

// EndFormat removes FormatIntentLabel from disk id whatever its value, keeping every other label; a disk without
// it is left as it is.
func (d *Disks) EndFormat(ctx context.Context, id string) error {
	doing := fmt.Sprintf("removing label %s from disk %s once its filesystem is made (compute.disks.setLabels)", FormatIntentLabel, id)
	return d.relabel(ctx, id, doing, func(labels map[string]string) bool {
		if _, ok := labels[FormatIntentLabel]; !ok {
			return false
		}
		delete(labels, FormatIntentLabel)
		return true
	})
}

// relabel reads disk id's labels, lets change edit them (false: nothing to change, and nothing is written), and
// writes them with the fingerprint read (disks.setLabels), waiting for the operation. A stale fingerprint (the
// labels changed meanwhile, by kubeup update's Disk task or a former try of this one whose answer was lost) reads
// them again, intentAttempts times in all; then it is not ready.
func (d *Disks) relabel(ctx context.Context, id, doing string, change func(map[string]string) bool) error {
	for attempt := 1; ; attempt++ {
		disk, err := d.get(ctx, id, doing)
		if err != nil {
			return err
		}
		labels := maps.Clone(disk.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		if !change(labels) {
			return nil
		}
		op, err := d.svc.Disks.SetLabels(d.project, d.zone, id, &compute.ZoneSetLabelsRequest{
			Labels: labels, LabelFingerprint: disk.LabelFingerprint, ForceSendFields: []string{"Labels"},
		}).Context(ctx).Do()
		if err == nil {
			err = waitOperation(ctx, d.svc, d.project, doing, op)
		} else {
			err = Classify(doing, err)
		}
		if httpCode(err) != http.StatusPreconditionFailed {
			return err
		}
		if attempt == intentAttempts {
			return engine.NotReady(fmt.Errorf("%s: the disk's labels changed between each of %d reads and writes: %w", doing, attempt, err))
		}
		engine.Logger(ctx).Info("the disk's labels changed since they were read; reading them again", "disk", id, "attempt", attempt)
	}
}
