package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kubeup.dev/kubeup/internal/mountinfo"
)

// Hold is a volume that a node still holds, as deleting it sees it: its claim has not expired, or a loop device
// is still bound to its image (mounted or not). Deleting such a volume would pull its data from under a node
// that uses it (the loop device keeps the deleted image open, "(deleted)" in losetup -a), so the delete refuses
// it. A volume whose claim expired and whose image no loop device is bound to is nobody's.
type Hold struct {
	Volume string
	// NodeID is the node the volume's claim names; "" when it has no claim (a loop device bound without one: by
	// hand, or by a node whose claim is gone).
	NodeID string
	// Claim is the claim file's path; "" when there is none.
	Claim string
	// Expires is when the claim's lease runs out; zero when it never does, or there is no claim. Expired says
	// it did: the claim then holds the volume only through its loop devices.
	Expires time.Time
	Expired bool
	// Devices are the loop devices bound to the volume's image.
	Devices []string
	// Mounts are where those devices are mounted, as this process's mount namespace shows it.
	Mounts []string
	// InUse says one of the devices is held exclusively: mounted, here or in another mount namespace (a node's
	// machine), or opened so by a process.
	InUse bool
}

// String says which volume is held, by whom and how: "volume V: " and State.
func (h Hold) String() string { return "volume " + h.Volume + ": " + h.State() }

// State says who holds the volume and how: "claimed by node n1 until 2026-01-02 18:02:03 UTC, attached as
// /dev/loop0, mounted at /r/mnt/v".
func (h Hold) State() string {
	var b strings.Builder
	switch {
	case h.NodeID == "":
		b.WriteString("no claim")
	case h.Expires.IsZero():
		fmt.Fprintf(&b, "claimed by node %s (a claim without a lease, held until it is released)", h.NodeID)
	case h.Expired:
		fmt.Fprintf(&b, "claimed by node %s until %s (expired)", h.NodeID, utc(h.Expires))
	default:
		fmt.Fprintf(&b, "claimed by node %s until %s", h.NodeID, utc(h.Expires))
	}
	if len(h.Devices) > 0 {
		fmt.Fprintf(&b, ", attached as %s", strings.Join(h.Devices, " "))
	}
	switch {
	case len(h.Mounts) > 0:
		fmt.Fprintf(&b, ", mounted at %s", strings.Join(h.Mounts, " "))
	case h.InUse:
		b.WriteString(", in use (mounted in another mount namespace, or opened exclusively)")
	}
	return b.String()
}

// fix says what the operator does to let the volume go, in the order to do it.
func (h Hold) fix() string {
	var steps []string
	if h.NodeID != "" {
		steps = append(steps, "stop protokube on node "+h.NodeID)
	}
	for _, m := range h.Mounts {
		steps = append(steps, "umount "+m)
	}
	if h.InUse && len(h.Mounts) == 0 {
		steps = append(steps, fmt.Sprintf("unmount it where it is mounted (findmnt --source %s, in the node's mount namespace)", h.Devices[0]))
	}
	for _, d := range h.Devices {
		steps = append(steps, "losetup --detach "+d)
	}
	switch {
	case h.NodeID == "" || h.Expired:
	case h.Expires.IsZero():
		steps = append(steps, fmt.Sprintf("remove its claim %s (a claim without a lease never expires)", h.Claim))
	default:
		steps = append(steps, fmt.Sprintf("remove its claim %s, or wait until its lease expires at %s", h.Claim, utc(h.Expires)))
	}
	return strings.Join(steps, ", then ")
}

// HeldVolumesError is a delete's refusal of the volumes that nodes still hold (see Hold): nothing was deleted,
// not even the volumes nobody holds, nor the cluster's DNS records.
type HeldVolumesError struct {
	Pool  string
	Holds []Hold
}

func (e *HeldVolumesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nodes still hold %d volume(s) in pool %s, so nothing was deleted: a node uses a volume's data while its claim is unexpired or a loop device is bound to its image. For each, on its node:", len(e.Holds), e.Pool)
	for _, h := range e.Holds {
		fmt.Fprintf(&b, "\n  %s: %s", h, h.fix())
	}
	b.WriteString("\nthen delete again")
	return b.String()
}

// holds returns the holds of vols, in their order. The caller holds the pool's lock when it deletes what is not
// held: claims and loop devices change under it alone (protokube attaches under it).
func (c *Cloud) holds(ctx context.Context, vols []VolumeInfo) ([]Hold, error) {
	now := c.clock()
	var out []Hold
	for _, v := range vols {
		h := Hold{Volume: v.Name}
		cl, err := c.Pool.readClaim(v.Name)
		if err != nil {
			return nil, fmt.Errorf("deleting volume %s: %w", v.Name, err)
		}
		if cl != nil {
			h.NodeID, h.Claim, h.Expires, h.Expired = cl.NodeID, c.Pool.claimPath(v.Name), cl.expires(), cl.expired(now)
		}
		if v.Device == "" { // a device volume's device is left as it is: only its claim holds it
			if h.Devices, err = c.boundTo(ctx, v.Name); err != nil {
				return nil, err
			}
		}
		for _, d := range h.Devices {
			busy, err := c.loopDevices().busy(d)
			if err != nil {
				return nil, fmt.Errorf("deleting volume %s: %w", v.Name, err)
			}
			h.InUse = h.InUse || busy
			h.Mounts = append(h.Mounts, c.mountPoints(d)...)
		}
		if cl != nil && !h.Expired || len(h.Devices) > 0 {
			out = append(out, h)
		}
	}
	return out, nil
}

// boundTo returns the loop devices bound to volume name's image; none when the image is gone.
func (c *Cloud) boundTo(ctx context.Context, name string) ([]string, error) {
	img, err := c.Pool.ImagePath(name)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	devs, err := c.loopDevices().bound(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("deleting volume %s: %w", name, err)
	}
	return devs, nil
}

// mountPointsOf returns where block device dev is mounted in this process's mount namespace, by its device
// number (/sys/class/block/NAME/dev, the MAJOR:MINOR field of /proc/self/mountinfo). It is for messages: none
// when either cannot be read.
func mountPointsOf(dev string) []string {
	num, err := os.ReadFile(filepath.Join("/sys/class/block", filepath.Base(dev), "dev"))
	if err != nil {
		return nil
	}
	mounts, err := mountinfo.Read()
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range mounts {
		if m.Number() == strings.TrimSpace(string(num)) {
			out = append(out, m.MountPoint)
		}
	}
	return out
}

func utc(t time.Time) string { return t.UTC().Format(time.DateTime + " MST") }
