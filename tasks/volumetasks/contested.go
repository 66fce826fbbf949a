package volumetasks

import (
	"context"
	"fmt"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// Contested is implemented by providers on which a volume can be attached to several nodes at once (an EBS
// volume with Multi-Attach, a GCE multi-writer disk): two nodes that both saw a volume free and attached it at
// the same moment both hold an attachment of it. The provider ranks a volume's attachments by a rule that every
// node computes alike from what the cloud says (ContestedError.Rule): the first wins the volume (List names it
// Holder), the others lost it (AlsoAttached). The winner neither formats nor mounts the volume while another
// attachment exists (its Attached is a not-ready ContestedError until they are gone); each loser detaches its own
// attachment (the Detach task), once nothing on its machine mounts the volume or holds it open.
type Contested interface {
	// Lost returns this node's attachment of volume id when it lost the volume: the volume is attached to this
	// node and to another that ranks first. nil when this node has no attachment of the volume, is the only
	// node it is attached to, or ranks first.
	Lost(ctx context.Context, id string) (*Loss, error)
	// DetachLost detaches this node's attachment of volume id, and no other node's, when Lost (read again from
	// the cloud) still says that this node lost it, and waits until it is gone; an attachment that did not lose
	// (any more) is left as it is. While the attachment's device is in use on this machine (Loss.Use), or cannot
	// be looked at yet, nothing is detached: an error (Loss.Refusal) says why.
	DetachLost(ctx context.Context, id string) error
}

// Loss is this node's attachment of a volume that another node won (see Contested).
type Loss struct {
	// VolumeID is the volume.
	VolumeID string
	// Winner is the node that keeps the volume.
	Winner Holder
	// Devices are the names this node's attachment shows under on this machine: each that exists, as the
	// provider names it. None while it does not show (yet).
	Devices []string
	// Use is what uses those devices on this machine.
	Use DeviceUse
	// Fix says how a person detaches this node's attachment by hand, in the provider's terms.
	Fix string
}

// Refusal returns why this node's attachment must not be detached now (nil: it may be): its device is mounted
// or held open on this machine (terminal: a person decides), or no device of it shows, so whether anything uses
// it cannot be told (not ready: a device being attached shows within seconds).
func (l *Loss) Refusal() error {
	switch {
	case l.Use.InUse():
		return engine.Terminal(fmt.Errorf("volume %s: node %s won it (it is attached there too), but this node's attachment is in use here: %s; "+
			"nothing is detached: a volume is never pulled from under what uses it. If the data there is what this node should serve, "+
			"detach the volume from %s instead; else stop what uses it (%s), and protokube detaches it at its next round (or: %s)",
			l.VolumeID, l.Winner, l.Use, l.Winner.NodeID, l.Use.fix(), l.Fix))
	case len(l.Devices) == 0:
		return engine.NotReady(fmt.Errorf("volume %s: node %s won it; this node's attachment shows no device on this machine yet, "+
			"so whether anything uses it cannot be told: it is detached once it shows", l.VolumeID, l.Winner))
	}
	return nil
}

// ContestedError is a volume attached to this node and to others at once (see Contested). Its class is
// not-ready when this node won (it waits for the others to let the volume go), terminal when it lost (it never
// mounts the volume; it detaches its attachment). It matches ErrHeld when this node lost.
type ContestedError struct {
	VolumeID string
	// Node is this node's id.
	Node string
	// Winner is the node that keeps the volume (this node, when it won); Losers are the others, this node among
	// them when it lost, in the provider's order.
	Winner Holder
	Losers []Holder
	// Rule says how the provider ranks attachments: "the earliest attachment (EC2's AttachTime) wins".
	Rule string
	// Fix says how a person ends the contest by hand, in the provider's terms.
	Fix string
}

// Won reports whether this node keeps the volume.
func (e *ContestedError) Won() bool { return e.Winner.NodeID == e.Node }

func (e *ContestedError) Error() string {
	var losers []string
	for _, h := range e.Losers {
		losers = append(losers, h.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "volume %s is attached to %d nodes at once, %s and %s: %s keeps it (%s)", e.VolumeID, len(e.Losers)+1,
		e.Winner, strings.Join(losers, ", "), e.Winner.NodeID, e.Rule)
	if e.Won() {
		fmt.Fprintf(&b, "; this node neither formats nor mounts it until the others have detached it (their protokube does, once nothing there uses it)")
	} else {
		fmt.Fprintf(&b, "; this node (%s) lost it: it never formats nor mounts it, and detaches its own attachment (VolumeDetach/%s) once nothing here uses it", e.Node, e.VolumeID)
	}
	if e.Fix != "" {
		b.WriteString("; " + e.Fix)
	}
	return b.String()
}

// Is makes a ContestedError that this node lost match ErrHeld: the winner holds the volume.
func (e *ContestedError) Is(target error) bool { return target == ErrHeld && !e.Won() }

// Classified returns e with its class: not-ready when this node won, terminal when it lost.
func (e *ContestedError) Classified() error {
	if e.Won() {
		return engine.NotReady(e)
	}
	return engine.Terminal(e)
}
