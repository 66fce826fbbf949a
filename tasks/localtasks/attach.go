package localtasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// loopDevices binds disk images to loop devices: losetup on a real machine, an in-memory fake in unit tests.
type loopDevices interface {
	// bound returns the loop devices bound to the image file img (by its device and inode), sorted.
	bound(ctx context.Context, img string) ([]string, error)
	// attach binds img to a free loop device and returns it.
	attach(ctx context.Context, img string) (string, error)
	// detach unbinds a loop device.
	detach(ctx context.Context, dev string) error
	// busy reports whether something holds dev open exclusively: a mounted filesystem does.
	busy(dev string) (bool, error)
}

// Attach claims volume id for this node and attaches it as a loop device over its image, and returns the
// device. A volume this node holds already keeps its device (the claim is renewed). A volume another node holds
// is a terminal error that matches volumetasks.ErrHeld, unless that node released it or its lease expired: then
// this node takes it over, after unbinding the loop devices the previous holder left, if nothing uses them.
func (v *Volumes) Attach(ctx context.Context, id string) (string, error) {
	if err := v.checkNode(); err != nil {
		return "", err
	}
	img, err := v.pool.ImagePath(id)
	if err != nil {
		return "", err
	}
	unlock, err := v.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	info, err := v.pool.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if info == nil {
		return "", engine.Terminal(fmt.Errorf("volume %s is not in the pool %s: create it (kubeup update cluster --yes) "+
			"or attach another volume", id, v.pool.dir))
	}
	c, err := v.pool.readClaim(id)
	if err != nil {
		return "", err
	}
	now := v.now()
	mine := c != nil && c.NodeID == v.node.NodeID
	if c != nil && !mine && !c.expired(now) {
		return "", v.heldBy(id, c)
	}
	if !mine && info.Device == "" {
		// Whatever is bound to the image is the previous holder's (or was bound by hand): never share it.
		if err := v.unbindAll(ctx, id, img, c, "claiming"); err != nil {
			return "", err
		}
	}
	rec := &claimRecord{NodeID: v.node.NodeID, InternalIP: v.node.InternalIP, ExternalIP: v.node.ExternalIP,
		Since: now, Renewed: now, Lease: v.leaseString()}
	if mine {
		rec.Since, rec.Device = c.Since, c.Device
	}
	if info.Device != "" {
		return v.attachDevice(ctx, info, c, rec)
	}
	bound, err := v.loops.bound(ctx, img)
	if err != nil {
		return "", err
	}
	dev := rec.Device
	if !slices.Contains(bound, dev) {
		dev = ""
		if len(bound) > 0 {
			dev = bound[0]
		}
	}
	if c != nil && !mine {
		engine.Logger(ctx).Warn("taking over a volume whose claim expired", "volume", id, "previous", c.NodeID,
			"renewed", c.Renewed, "expired", c.expires())
	}
	if dev == "" {
		// The claim first, then the device: a crash between leaves a claim of this node without a device, which
		// the next Attach completes, never a device without a claim.
		rec.Device = ""
		if err := v.pool.writeClaim(id, rec); err != nil {
			return "", err
		}
		if dev, err = v.loops.attach(ctx, img); err != nil {
			if !mine {
				// Claimed in vain: leave the volume to the others. A failure here leaves a claim without a
				// device, which this node's next Attach completes or Detach removes.
				err = errors.Join(err, v.pool.removeClaim(id))
			}
			return "", fmt.Errorf("attaching volume %s: %w", id, err)
		}
		engine.Logger(ctx).Info("attached volume", "volume", id, "device", dev, "image", img)
	}
	rec.Device = dev
	if err := v.pool.writeClaim(id, rec); err != nil {
		return "", err
	}
	return dev, nil
}

// attachDevice completes Attach for a device volume, under the pool's lock, once the claim may be taken: c is the
// volume's claim (nil: none), rec the claim to write. Nothing is bound: the device is the attachment. A device
// this node did not hold is refused while something holds it open exclusively (mounted by its previous holder).
func (v *Volumes) attachDevice(ctx context.Context, info *VolumeInfo, c, rec *claimRecord) (string, error) {
	dev, err := v.blockDevice(info.Device)
	if err != nil {
		return "", engine.Terminal(fmt.Errorf("attaching volume %s: %w: fix the device field of %s, or connect the disk",
			info.Name, err, v.pool.sidecarPath(info.Name)))
	}
	mine := c != nil && c.NodeID == v.node.NodeID
	if !mine {
		if err := v.refuseBusy(info.Name, dev, c, "claiming"); err != nil {
			return "", err
		}
		if c != nil {
			engine.Logger(ctx).Warn("taking over a volume whose claim expired", "volume", info.Name, "previous", c.NodeID,
				"renewed", c.Renewed, "expired", c.expires())
		}
	}
	fresh := rec.Device != dev
	rec.Device = dev
	if err := v.pool.writeClaim(info.Name, rec); err != nil {
		return "", err
	}
	if fresh {
		engine.Logger(ctx).Info("attached volume", "volume", info.Name, "device", dev, "sidecar", v.pool.sidecarPath(info.Name))
	}
	return dev, nil
}

// refuseBusy refuses, terminally, to move volume id while its device dev is in use. c is the volume's claim (nil:
// none), for the message; doing says what the caller does ("claiming").
func (v *Volumes) refuseBusy(id, dev string, c *claimRecord, doing string) error {
	busy, err := v.loops.busy(dev)
	if err != nil {
		return fmt.Errorf("%s volume %s: %w", doing, id, err)
	}
	if !busy {
		return nil
	}
	whose := "without a claim"
	if c != nil {
		whose = "claimed by node " + c.NodeID
	}
	return engine.Terminal(fmt.Errorf("%s volume %s: it is attached as %s (%s) and in use, by a mounted filesystem or another exclusive user: "+
		"kubeup never gives a volume that is in use to another node: unmount it where it is mounted (findmnt --source %s), then try again",
		doing, id, dev, whose, dev))
}

// free makes volume id free to change hands, under the pool's lock: for an image, every loop device bound to it
// is unbound (none when one is in use); a device volume's device must not be in use (a device that is gone is
// not). c is the volume's claim (nil: none); doing says what the caller does ("detaching").
func (v *Volumes) free(ctx context.Context, id, img string, c *claimRecord, doing string) error {
	sc, err := v.pool.readSidecar(id)
	if err != nil {
		return err
	}
	if sc == nil || sc.info.Device == "" {
		return v.unbindAll(ctx, id, img, c, doing)
	}
	dev, err := v.blockDevice(sc.info.Device)
	if err != nil {
		return nil // no such device here: nothing can use it
	}
	return v.refuseBusy(id, dev, c, doing)
}

// Attached returns the device volume id is attached as (a loop device, or a device volume's own device), when
// this node holds its claim, its lease has not expired and, for an image, the claim names a loop device bound to
// it; "" otherwise (then Attach renews or takes the claim, or completes it: a node killed between its losetup
// and the claim that records the device left the image bound and the claim without a device).
func (v *Volumes) Attached(ctx context.Context, id string) (string, error) {
	img, err := v.pool.ImagePath(id)
	if err != nil {
		return "", err
	}
	c, err := v.pool.readClaim(id)
	if err != nil || c == nil || c.NodeID != v.node.NodeID || c.expired(v.now()) {
		return "", err
	}
	sc, err := v.pool.readSidecar(id)
	if err != nil {
		return "", err
	}
	if sc != nil && sc.info.Device != "" {
		dev, err := v.blockDevice(sc.info.Device)
		if err != nil {
			return "", fmt.Errorf("volume %s: %w: fix the device field of %s, or connect the disk", id, err, v.pool.sidecarPath(id))
		}
		return dev, nil
	}
	bound, err := v.loops.bound(ctx, img)
	if err != nil || len(bound) == 0 {
		return "", err
	}
	if slices.Contains(bound, c.Device) {
		return c.Device, nil
	}
	return "", nil
}

// Detach unbinds the loop devices of volume id and removes this node's claim. A volume whose claim is not this
// node's is left alone. A device still in use (a filesystem mounted from it) is refused, and the claim kept:
// unmount it first.
func (v *Volumes) Detach(ctx context.Context, id string) error {
	c, err := v.endClaim(ctx, id, "detaching", true)
	if err != nil || c == nil {
		return err
	}
	engine.Logger(ctx).Info("detached volume", "volume", id)
	return nil
}

// endClaim frees volume id (see free) and removes its claim, under the pool's lock, and returns the claim it
// ended (nil: none). With mineOnly, a volume whose claim is not this node's is left alone. doing says what the
// caller does, for the messages ("detaching").
func (v *Volumes) endClaim(ctx context.Context, id, doing string, mineOnly bool) (*claimRecord, error) {
	img, err := v.pool.ImagePath(id)
	if err != nil {
		return nil, err
	}
	unlock, err := v.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := v.pool.readClaim(id)
	if err != nil || (mineOnly && (c == nil || c.NodeID != v.node.NodeID)) {
		return nil, err
	}
	if err := v.free(ctx, id, img, c, doing); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, nil
	}
	return c, v.pool.removeClaim(id)
}

// unbindAll unbinds every loop device bound to volume id's image, or none when one of them is in use. c is the
// volume's claim (nil: none), for the message; doing says what the caller does ("claiming").
func (v *Volumes) unbindAll(ctx context.Context, id, img string, c *claimRecord, doing string) error {
	bound, err := v.loops.bound(ctx, img)
	if err != nil {
		return err
	}
	for _, dev := range bound {
		if err := v.refuseBusy(id, dev, c, doing); err != nil {
			return err
		}
	}
	for _, dev := range bound {
		if err := v.loops.detach(ctx, dev); err != nil {
			return fmt.Errorf("%s volume %s: %w", doing, id, err)
		}
		engine.Logger(ctx).Info("unbound loop device", "volume", id, "device", dev)
	}
	return nil
}

// resolveBlockDevice resolves path's symlinks (/dev/disk/by-id/...) and checks that the result is a block device.
func resolveBlockDevice(path string) (string, error) {
	dev, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("device %s: %w", path, engine.FileError(err))
	}
	fi, err := os.Stat(dev)
	if err != nil {
		return "", fmt.Errorf("device %s: %w", path, engine.FileError(err))
	}
	if fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return "", fmt.Errorf("device %s (%s) is not a block device", path, dev)
	}
	return dev, nil
}

// losetup is loopDevices on the live machine, through losetup(8).
type losetup struct{}

func (losetup) bound(ctx context.Context, img string) ([]string, error) {
	out, err := losetupRun(ctx, "--list", "--noheadings", "--output", "NAME", "--associated", img)
	if err != nil {
		return nil, err
	}
	devs := strings.Fields(out)
	slices.Sort(devs)
	return devs, nil
}

func (losetup) attach(ctx context.Context, img string) (string, error) {
	out, err := losetupRun(ctx, "--find", "--show", img)
	if err != nil {
		return "", err
	}
	dev := strings.TrimSpace(out)
	if !strings.HasPrefix(dev, "/dev/") {
		return "", fmt.Errorf("losetup --find --show %s printed %q, not a device", img, out)
	}
	return dev, nil
}

func (losetup) detach(ctx context.Context, dev string) error {
	_, err := losetupRun(ctx, "--detach", dev)
	return err
}

// busy reports whether dev is mounted, or otherwise claimed exclusively, in any mount namespace
// (volumetasks.HeldExclusively).
func (losetup) busy(dev string) (bool, error) {
	busy, err := volumetasks.HeldExclusively(dev)
	if err != nil {
		return false, engine.FileError(err)
	}
	return busy, nil
}

func losetupRun(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "losetup", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
