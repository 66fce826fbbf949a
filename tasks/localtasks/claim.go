// Volumes is the local provider's volumetasks.Provider and volumetasks.Renewer: protokube's exclusive claim
// of a pool volume for one node, and its attachment as a loop device.
//
// A claim is the file Dir/NAME.claim next to the volume's image and sidecar: JSON with the holder's node id and
// addresses, the device, when it was claimed, when it was last renewed and its lease. It is written atomically
// (temporary file, fsync, rename) under the pool's lock, so that of two nodes that race for a volume exactly one
// claims it, whether they are goroutines, processes or network namespaces on one machine. A claim held by another
// node is taken over only when it was released (the file is gone) or its lease expired (renewed + lease < now):
// a node renews the claims it holds each round (Renew). A claim without a lease never expires.
//
// Attach claims first and then binds a loop device to the volume's image (losetup); Detach unbinds the device
// and then removes the claim, so a crash between the two leaves a claim that the holder's next Attach completes
// or its next Detach finishes. A loop device that is still bound to an image whose claim changes hands is the
// previous holder's: it is unbound if nothing uses it, and refused, claiming nothing, if something does (a
// mounted filesystem holds it): a volume is never attached to two nodes.
//
// Bare metal: a device volume (VolumeInfo.Device, a sidecar an operator wrote for a disk of the machine) is
// claimed the same way, but nothing is bound: once claimed, the device itself (its path with symlinks resolved,
// which must be a block device) is the attachment. A node takes over another node's released or expired claim
// only while nothing holds the device open exclusively (the check the loop devices get), so a disk still mounted
// by its previous holder is refused; Detach and Release refuse while the device is in use and then remove the
// claim.
package localtasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// Volumes is one node's view of a Pool's volumes: the claims it holds, and the loop devices they are attached
// as. Several Volumes of different nodes may share one pool directory (in one process, in several).
type Volumes struct {
	pool  *Pool
	node  volumetasks.Holder
	lease time.Duration
	now   func() time.Time // the clock; tests move it
	loops loopDevices
	// blockDevice resolves the device of a device volume (symlinks) and checks that it is a block device; tests
	// replace it, as a temporary file is not one.
	blockDevice func(path string) (string, error)
}

var (
	_ volumetasks.Provider = (*Volumes)(nil)
	_ volumetasks.Renewer  = (*Volumes)(nil)
)

// NewVolumes returns node's view of the volumes in pool. A claim node makes lasts lease after its last renewal
// (lease <= 0: until it is released). node.NodeID must not be empty: claims are made in its name.
func NewVolumes(pool *Pool, node volumetasks.Holder, lease time.Duration) *Volumes {
	return &Volumes{pool: pool, node: node, lease: max(lease, 0), now: time.Now, loops: losetup{}, blockDevice: resolveBlockDevice}
}

// Node returns this node as its claims record it.
func (v *Volumes) Node() volumetasks.Holder { return v.node }

// claimRecord is a claim file's content.
type claimRecord struct {
	NodeID     string `json:"nodeID"`
	InternalIP string `json:"internalIP,omitempty"`
	ExternalIP string `json:"externalIP,omitempty"`
	// Device is the loop device the holder attached the volume as; "" until it is attached.
	Device  string    `json:"device,omitempty"`
	Since   time.Time `json:"since"`
	Renewed time.Time `json:"renewed"`
	// Lease is how long the claim lasts after Renewed, as a Go duration ("5m0s"); "" for ever.
	Lease string `json:"lease,omitempty"`
}

func (c *claimRecord) holder() volumetasks.Holder {
	return volumetasks.Holder{NodeID: c.NodeID, InternalIP: c.InternalIP, ExternalIP: c.ExternalIP}
}

// expires returns when the claim's lease runs out; the zero time when it never does.
func (c *claimRecord) expires() time.Time {
	d, err := time.ParseDuration(c.Lease)
	if err != nil || d <= 0 {
		return time.Time{}
	}
	return c.Renewed.Add(d)
}

// expired reports whether the lease ran out before now.
func (c *claimRecord) expired(now time.Time) bool {
	e := c.expires()
	return !e.IsZero() && e.Before(now)
}

func (p *Pool) claimPath(name string) string { return filepath.Join(p.dir, name+".claim") }

// readClaim reads a volume's claim; nil, nil when there is none.
func (p *Pool) readClaim(name string) (*claimRecord, error) {
	path := p.claimPath(name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the claim of volume %s: %w", name, engine.FileError(err))
	}
	var c claimRecord
	if err := json.Unmarshal(b, &c); err != nil || c.NodeID == "" {
		if err == nil {
			err = errors.New("no nodeID")
		}
		return nil, fmt.Errorf("%s is not a volume claim (%v): fix it, or remove it once you are sure no node uses volume %s",
			path, err, name)
	}
	if c.Lease != "" {
		if _, err := time.ParseDuration(c.Lease); err != nil {
			return nil, fmt.Errorf("%s: lease %q is not a duration such as \"5m0s\": fix it, or remove the claim once you are sure no node uses volume %s",
				path, c.Lease, name)
		}
	}
	return &c, nil
}

// writeClaim replaces a volume's claim atomically. The caller holds the pool's lock.
func (p *Pool) writeClaim(name string, c *claimRecord) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(p.claimPath(name), append(b, '\n'), 0o644)
}

// removeClaim removes a volume's claim; none is fine. The caller holds the pool's lock.
func (p *Pool) removeClaim(name string) error {
	if err := os.Remove(p.claimPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("releasing the claim of volume %s: %w", name, engine.FileError(err))
	}
	if err := atomicfile.SyncDir(p.dir); err != nil {
		return fmt.Errorf("releasing the claim of volume %s: %w", name, engine.FileError(err))
	}
	return nil
}

// isClaimTemp reports whether name is a temporary file of a claim: ".NAME.claim.tmp-DIGITS".
func isClaimTemp(name string) bool {
	i := strings.LastIndex(name, ".claim.tmp-")
	return i > 1 && validateVolumeName(name[1:i]) == nil && atomicfile.IsTempOf(name, name[1:i]+".claim")
}

// lock takes the pool's lock for a change of claims, and removes the temporary claim files a killed writer left
// (the pool's own lock cleans only the sidecars').
func (v *Volumes) lock(ctx context.Context) (unlock func(), err error) {
	unlock, err = v.pool.lock(ctx)
	if err != nil {
		return nil, err
	}
	cleanTemps(ctx, v.pool.dir, isClaimTemp)
	return unlock, nil
}

// checkNode refuses to claim in the name of a node without an id.
func (v *Volumes) checkNode() error {
	if v.node.NodeID == "" {
		return errors.New("this node has no id: the local provider records claims by node id; give protokube one")
	}
	return nil
}

// heldBy says that another node holds volume name: a terminal error that matches volumetasks.ErrHeld.
func (v *Volumes) heldBy(name string, c *claimRecord) error {
	return engine.Terminal(&volumetasks.HeldError{
		VolumeID: name,
		Holder:   c.holder(),
		Since:    c.Since,
		Expires:  c.expires(),
		Fix: fmt.Sprintf("if node %s is dead, wait until its lease expires, or release its claim "+
			"(remove %s once no process of node %s uses the volume: what a cloud does when an instance dies)",
			c.NodeID, v.pool.claimPath(name), c.NodeID),
	})
}

// List returns the pool's volumes that carry every tag of filter, sorted by name, each with its holder: the
// node whose claim it is, unless that claim is another node's and its lease expired (such a volume is free to
// take over). A claim of this node counts as held even when its lease expired: nobody took it over, and this
// node's next Attach or Renew renews it.
func (v *Volumes) List(ctx context.Context, filter map[string]string) ([]volumetasks.Volume, error) {
	infos, err := v.pool.List(ctx, filter)
	if err != nil {
		return nil, err
	}
	now := v.now()
	out := make([]volumetasks.Volume, 0, len(infos))
	for _, info := range infos {
		vol := volumetasks.Volume{ID: info.Name, Zone: info.Zone, Tags: info.Tags}
		c, err := v.pool.readClaim(info.Name)
		if err != nil {
			return nil, err
		}
		if c != nil && (c.NodeID == v.node.NodeID || !c.expired(now)) {
			h := c.holder()
			vol.Holder = &h
		}
		out = append(out, vol)
	}
	return out, nil
}

// Renew extends this node's lease on each of ids. A volume whose claim is gone, or another node's now, is an
// error that names it; the others are renewed all the same.
func (v *Volumes) Renew(ctx context.Context, ids []string) error {
	if err := v.checkNode(); err != nil {
		return err
	}
	for _, id := range ids {
		if err := validateVolumeName(id); err != nil {
			return err
		}
	}
	unlock, err := v.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	now := v.now()
	var errs []error
	for _, id := range ids {
		c, err := v.pool.readClaim(id)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case c == nil:
			errs = append(errs, fmt.Errorf("renewing the claim of volume %s: node %s holds it no longer: its claim was released "+
				"(by Detach, or as a dead machine's); attach it again to claim it", id, v.node.NodeID))
			continue
		case c.NodeID != v.node.NodeID:
			errs = append(errs, fmt.Errorf("renewing the claim of volume %s for node %s: %w", id, v.node.NodeID, v.heldBy(id, c)))
			continue
		}
		c.Renewed = now
		c.Lease = v.leaseString()
		if err := v.pool.writeClaim(id, c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (v *Volumes) leaseString() string {
	if v.lease <= 0 {
		return ""
	}
	return v.lease.String()
}

// Release ends whatever claim volume id has, whichever node holds it, as a cloud detaches the volumes of an
// instance that died: the loop devices bound to its image are unbound, then the claim is removed. A device still
// in use (a filesystem mounted from it) is refused, and nothing is released: unmount it first. A volume without
// a claim is not an error.
func (v *Volumes) Release(ctx context.Context, id string) error {
	c, err := v.endClaim(ctx, id, "releasing", false)
	if err != nil || c == nil {
		return err
	}
	engine.Logger(ctx).Warn("released a volume's claim, as a cloud does for a dead machine", "volume", id, "holder", c.NodeID,
		"since", c.Since, "renewed", c.Renewed)
	return nil
}
