package localtasks

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// formatIntentField is the field of a volume's sidecar that records a format intent (volumetasks.FormatIntents):
// the node that is formatting the volume, and since when. It is in the sidecar, the volume's record, so that it
// stays with the volume whichever node claims it next; the sidecar is replaced atomically and fsynced under the
// pool's lock, so the intent is on disk once BeginFormat returns. Fields of the sidecar that other code writes
// keep it (writeSidecar keeps every field it does not know).
const formatIntentField = "formatIntent"

type formatIntentRecord struct {
	NodeID string    `json:"nodeID"`
	Since  time.Time `json:"since"`
}

var (
	_ volumetasks.FormatIntents = (*Volumes)(nil)
	_ volumetasks.MountGuard    = (*Volumes)(nil)
)

// BeforeMount confirms, under the pool's lock, that this node still holds volume id right before it is mounted
// (stillMine): a node that took longer than its lease since its attach may have lost it.
func (v *Volumes) BeforeMount(ctx context.Context, id string) error {
	if err := validateVolumeName(id); err != nil {
		return err
	}
	unlock, err := v.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	sc, err := v.pool.readSidecar(id)
	if err != nil {
		return err
	}
	if sc == nil {
		return engine.Terminal(fmt.Errorf("volume %s: %w", id, fs.ErrNotExist))
	}
	return v.stillMine(ctx, id, sc.info.Device != "", "mounting it")
}

// FormatIntent returns the node whose format intent volume id's sidecar records; "" when it records none.
func (v *Volumes) FormatIntent(ctx context.Context, id string) (string, error) {
	if err := validateVolumeName(id); err != nil {
		return "", err
	}
	sc, err := v.pool.readSidecar(id)
	switch {
	case err != nil:
		return "", err
	case sc == nil:
		return "", engine.Terminal(fmt.Errorf("volume %s: %w", id, fs.ErrNotExist))
	}
	raw, ok := sc.raw[formatIntentField]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var r formatIntentRecord
	if err := json.Unmarshal(raw, &r); err != nil || r.NodeID == "" {
		if err == nil {
			err = fmt.Errorf("no nodeID")
		}
		return "", engine.Terminal(fmt.Errorf("%s: field %s is not a format intent (%v): it records that a node began formatting "+
			"the volume; remove the field only if the volume holds a filesystem that was mounted, or holds data", v.pool.sidecarPath(id), formatIntentField, err))
	}
	return r.NodeID, nil
}

// BeginFormat records this node's intent to format volume id in its sidecar, durably.
func (v *Volumes) BeginFormat(ctx context.Context, id string) error {
	if err := v.checkNode(); err != nil {
		return err
	}
	b, err := json.Marshal(formatIntentRecord{NodeID: v.node.NodeID, Since: v.now().UTC()})
	if err != nil {
		return err
	}
	return v.pool.updateSidecar(ctx, id, func(sc *sidecar) error {
		if err := v.stillMine(ctx, id, sc.info.Device != "", "formatting it"); err != nil {
			return err
		}
		if sc.raw == nil {
			sc.raw = map[string]json.RawMessage{}
		}
		sc.raw[formatIntentField] = b
		return nil
	})
}

// EndFormat removes the format intent from volume id's sidecar; none is not an error. The node must still hold
// the volume (it mounts it next); a node that lost it leaves the intent to the new holder, which formats again
// what is a filesystem this node made and never mounted.
func (v *Volumes) EndFormat(ctx context.Context, id string) error {
	return v.pool.updateSidecar(ctx, id, func(sc *sidecar) error {
		if err := v.stillMine(ctx, id, sc.info.Device != "", "mounting it"); err != nil {
			return err
		}
		delete(sc.raw, formatIntentField)
		return nil
	})
}

// stillMine refuses, with a terminal error, unless this node still holds volume id: between its attach and its
// mkfs or mount, a node that took longer than its lease (a stall, or a long read of a slow device) may have lost
// the volume to another, which unbound this node's loop device (that a third volume may now use). A claim of
// this node whose lease ran out while nobody took it over is still this node's, as List says: it is renewed
// here. deviceVolume says the volume is a block device of its own (no loop device to check). The caller holds
// the pool's lock, under which claims change.
func (v *Volumes) stillMine(ctx context.Context, id string, deviceVolume bool, doing string) error {
	c, err := v.pool.readClaim(id)
	if err != nil {
		return err
	}
	switch {
	case c == nil:
		return engine.Terminal(fmt.Errorf("volume %s: this node's claim is gone, so it stops short of %s: nothing was changed (the next round claims a volume again)", id, doing))
	case c.NodeID != v.node.NodeID:
		return v.heldBy(id, c)
	}
	if c.Device != "" && !deviceVolume { // a loop device: still bound to this volume's image
		img, err := v.pool.ImagePath(id)
		if err != nil {
			return err
		}
		bound, err := v.loops.bound(ctx, img)
		if err != nil {
			return err
		}
		if !slices.Contains(bound, c.Device) {
			return engine.Terminal(fmt.Errorf("volume %s: this node's claim names %s, which is no longer bound to %s, so it stops short of %s: nothing was changed (the next round attaches it again)",
				id, c.Device, img, doing))
		}
	}
	if c.expired(v.now()) {
		c.Renewed = v.now()
		return v.pool.writeClaim(id, c)
	}
	return nil
}
