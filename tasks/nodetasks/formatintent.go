package nodetasks

import (
	"context"
	"fmt"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// An mkfs killed before it writes its superblock (SIGKILL, a crash, a machine that dies) leaves a device that
// reads as neither blank nor a filesystem: blocks that are not zero, and no signature. Refusing it, as anything
// FormatAndMount cannot tell from data, would leave the volume unusable for ever. So a format is journaled on the
// volume itself, where any node that holds the volume next can read it (volumetasks.FormatIntents: a file of the
// local pool, an EBS tag, a GCE label):
//
//  1. the device is probed blank and read as zeros (probe.go), under the device lock;
//  2. BeginFormat records the intent on the volume, durably;
//  3. the device is probed again, and must hold what was assessed (stillHolds); then mkfs;
//  4. EndFormat removes the intent; only then is the filesystem mounted.
//
// A volume that still carries an intent was never mounted since its intent was recorded on a zeroed device, so
// whatever is on it came from the interrupted mkfs: the device is formatted again when it holds nothing blkid
// names, or an ext filesystem of the expected type whose superblock says it was never mounted and holds no file
// beyond what mke2fs makes (mkfs may have been killed after the superblock and before its last metadata). An
// intent that outlives its EndFormat (a cloud's eventually consistent read, a DeleteTags the node may not call)
// cannot cost data: a filesystem that was mounted has a mount time in its superblock, and one filled offline
// (mke2fs -d, debugfs -w) an inode in use more; either is mounted, never formatted. Anything else on the device
// (a partition table, another signature, another filesystem type) is refused as ever.

// FormatJournal is where the provider of a node's volumes records, on a volume itself, that a node is about to
// format it (volumetasks.FormatIntents). A FormatAndMount reaches it through its Node (NodeOptions.FormatJournal),
// by the id of its volume (FormatAndMount.Volume).
type FormatJournal interface {
	// FormatIntent returns the node that recorded a format intent on volume id, "" when it carries none.
	FormatIntent(ctx context.Context, id string) (nodeID string, err error)
	// BeginFormat records this node's intent to format volume id; it is durable once BeginFormat returns.
	BeginFormat(ctx context.Context, id string) error
	// EndFormat removes the intent from volume id.
	EndFormat(ctx context.Context, id string) error
}

// MountGuard confirms, right before a mount, that this node still holds volume id, as attached
// (volumetasks.MountGuard: the local provider's claims have a lease that may lapse between attach and mount). A
// FormatAndMount reaches it through its Node (NodeOptions.MountGuard).
type MountGuard interface {
	BeforeMount(ctx context.Context, id string) error
}

// journal is the node's format journal for m's volume; nil when m names no volume or the node has none.
func (m *FormatAndMount) journal(n *Node) FormatJournal {
	if m.Volume == "" {
		return nil
	}
	return n.journal
}

// verdict is what FormatAndMount makes of a device it is to mount.
type verdict int

const (
	// keep: mount what the device holds (checkDevice refuses what must not be mounted).
	keep verdict = iota
	// formatBlank: the device is blank and reads as zeros: format it.
	formatBlank
	// formatAgain: the device holds what an interrupted format of this volume left: format it again.
	formatAgain
)

// assess decides what to do with device dev, which holds pr, for a filesystem of type fsType: the rules at the top
// of this file. The caller holds the device lock and has found nothing mounted from dev at the mount point. node
// is the node whose intent made it formatAgain. A device without a signature whose first or last MiB is not zero
// and that carries no intent is the terminal error of checkZeroed.
func (m *FormatAndMount) assess(ctx context.Context, n *Node, dev string, pr probe, fsType string) (v verdict, node string, err error) {
	switch {
	case pr.blank():
		off, err := firstDataByte(ctx, dev)
		if err != nil {
			return keep, "", err
		}
		if off < 0 {
			return formatBlank, "", nil
		}
		if node, err = m.formatIntent(ctx, n); err != nil || node != "" {
			return formatAgain, node, err
		}
		return keep, "", notZeroed(dev, off)
	case pr.fsType == fsType && pr.ptType == "" && isExt(fsType) && extNeverMounted(dev) && extAsMade(dev):
		if node, err = m.formatIntent(ctx, n); err != nil || node != "" {
			return formatAgain, node, err
		}
	}
	return keep, "", nil
}

// formatIntent returns the node whose format intent the volume carries; "" when it carries none, or m names no
// volume, or the node's provider records no intents.
func (m *FormatAndMount) formatIntent(ctx context.Context, n *Node) (string, error) {
	j := m.journal(n)
	if j == nil {
		return "", nil
	}
	node, err := j.FormatIntent(ctx, m.Volume)
	if err != nil {
		return "", fmt.Errorf("reading the format intent of volume %s: %w", m.Volume, err)
	}
	return node, nil
}

// format records the intent, makes the filesystem and removes the intent; it returns the new filesystem's probe.
// assessed is what dev held when v was decided: right before mkfs, after BeginFormat (a cloud call, the pool's
// lock: time in which the device may have changed), dev must hold it still, and a blank one still read as zeros.
func (m *FormatAndMount) format(ctx context.Context, n *Node, fsType, dev string, assessed probe, v verdict) (probe, error) {
	j := m.journal(n)
	if j != nil {
		if err := j.BeginFormat(ctx, m.Volume); err != nil {
			return probe{}, fmt.Errorf("recording the intent to format volume %s: %w", m.Volume, err)
		}
	}
	if err := stillHolds(ctx, dev, assessed, v); err != nil {
		return probe{}, err
	}
	if err := mkfs(ctx, fsType, dev); err != nil {
		return probe{}, err
	}
	pr, err := probeDevice(ctx, dev)
	if err != nil {
		return probe{}, err
	}
	if pr.fsType != fsType {
		return probe{}, engine.Terminal(fmt.Errorf("device %s: mkfs.%s exited 0, but blkid then found %s on it: check the device and mkfs", dev, fsType, pr))
	}
	if j != nil {
		if err := j.EndFormat(ctx, m.Volume); err != nil {
			return probe{}, fmt.Errorf("removing the format intent of volume %s: %w", m.Volume, err)
		}
	}
	return pr, nil
}

// stillHolds refuses dev, with a terminal error, unless blkid finds on it what it found when verdict v was decided
// (assessed), and, for a blank device, it still reads as zeros.
func stillHolds(ctx context.Context, dev string, assessed probe, v verdict) error {
	now, err := probeDevice(ctx, dev)
	if err != nil {
		return err
	}
	if now.fsType != assessed.fsType || now.uuid != assessed.uuid || now.ptType != assessed.ptType || now.other != assessed.other {
		return engine.Terminal(fmt.Errorf("device %s changed while it was being formatted: it held %s%s, and now holds %s%s: "+
			"another process or node writes to it, or another device took its name; nothing was formatted: check what uses the device",
			dev, assessed, uuidNote(assessed), now, uuidNote(now)))
	}
	switch {
	case v == formatBlank:
		return checkZeroed(ctx, dev)
	case now.fsType != "" && !(extNeverMounted(dev) && extAsMade(dev)):
		return engine.Terminal(fmt.Errorf("device %s: its %s filesystem (UUID %s) was mounted or written to while it was being formatted again: it may hold data now, so nothing was formatted; "+
			"mount it and look (its format intent is left on the volume)", dev, now.fsType, now.uuid))
	}
	return nil
}

func uuidNote(p probe) string {
	if p.uuid == "" {
		return ""
	}
	return " (UUID " + p.uuid + ")"
}

func isExt(fsType string) bool {
	return strings.HasPrefix(fsType, "ext") && len(fsType) == 4
}
