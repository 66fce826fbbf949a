package volumetasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Volume is a volume as a Provider lists it.
type Volume struct {
	// ID is the provider's id of the volume: the local provider's volume name in its pool, an EBS volume id.
	ID string
	// Zone is the zone the volume is in; a volume is attached only to a node of its zone.
	Zone string
	// Tags are the volume's tags, by which protokube finds the etcd member volumes of a cluster.
	Tags map[string]string
	// Holder is the node that holds the volume's claim (attachment); nil when the volume is free. A volume
	// attached to several nodes at once is held by the one that wins it (see Contested).
	Holder *Holder
	// AlsoAttached are the other nodes a volume is attached to at the same time as to Holder (EBS Multi-Attach,
	// a GCE disk with several users: nodes that attached it in a race with Holder), in the provider's order: each
	// must let it go before Holder mounts it. None for a volume attached to one node, or none.
	AlsoAttached []Holder
}

// Holder is a node as a claim records it.
type Holder struct {
	// NodeID identifies the node: its instance id, or the name the local provider's node was given.
	NodeID string
	// InternalIP and ExternalIP are the node's addresses ("" when it has none): the DNS records of the members
	// it holds point there.
	InternalIP, ExternalIP string
}

// String names the node and its addresses: "node-a (10.0.0.1, external 203.0.113.1)".
func (h Holder) String() string {
	var ips []string
	if h.InternalIP != "" {
		ips = append(ips, h.InternalIP)
	}
	if h.ExternalIP != "" {
		ips = append(ips, "external "+h.ExternalIP)
	}
	if len(ips) == 0 {
		return h.NodeID
	}
	return h.NodeID + " (" + strings.Join(ips, ", ") + ")"
}

// Provider claims and attaches volumes for one node. Implementations are safe for concurrent use, and classify
// their errors for the engine: engine.Retryable for throttling and server errors, engine.ErrAccessDenied wrapped
// for permissions, ErrHeld (terminal) for a volume another node holds; anything else is terminal.
type Provider interface {
	// Node returns this node, as the provider's claims record it.
	Node() Holder
	// List returns the volumes that carry every tag of filter (with the same value, or any value where the
	// filter's value is ""), sorted by ID. A nil filter lists every volume.
	List(ctx context.Context, filter map[string]string) ([]Volume, error)
	// Attach claims volume id for Node() and attaches it, and returns the device it is attached as. A volume
	// this node holds already is not attached twice: its device is returned. A volume another node holds is an
	// error that matches ErrHeld and names the holder (see HeldError).
	Attach(ctx context.Context, id string) (device string, err error)
	// Attached returns the device volume id is attached as on this node; "" when this node does not hold it or
	// it is not attached here.
	Attached(ctx context.Context, id string) (device string, err error)
	// Detach detaches volume id from this node and releases this node's claim. A volume this node does not
	// hold is not an error, and is left alone.
	Detach(ctx context.Context, id string) error
}

// Renewer is implemented by providers whose claims are leases: a node must renew what it holds before the lease
// expires, or another node may take it over. protokube renews the volumes it holds each round.
type Renewer interface {
	// Renew extends this node's lease on each volume of ids. A volume this node no longer holds is an error
	// that matches ErrHeld when another node took it over.
	Renew(ctx context.Context, ids []string) error
}

// World is a world whose tasks reach a volume provider: every world with volumes (a cloud, a protokube round).
type World interface {
	VolumeProvider() Provider
}

// ErrHeld is matched (errors.Is) by the error of an attach or a renewal of a volume that another node holds.
var ErrHeld = errors.New("held by another node")

// HeldError is a volume held by another node, with what the provider knows of the claim. It matches ErrHeld.
// Providers return it (or an error that wraps it) so that every message names the volume, the holder and the
// way out.
type HeldError struct {
	// VolumeID is the volume.
	VolumeID string
	// Holder is the node that holds it.
	Holder Holder
	// Since is when the holder claimed it, Expires when its lease runs out; zero when the provider does not say
	// (Expires is zero too for claims without a lease).
	Since, Expires time.Time
	// Fix says how the claim can end, in the provider's terms: "detach it in the EC2 console", "remove the
	// claim file ...". Empty: the generic advice.
	Fix string
}

func (e *HeldError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "volume %s is held by node %s", e.VolumeID, e.Holder)
	if !e.Since.IsZero() {
		fmt.Fprintf(&b, " since %s", e.Since.Format(time.RFC3339))
	}
	if !e.Expires.IsZero() {
		fmt.Fprintf(&b, ", its lease expires at %s unless renewed", e.Expires.Format(time.RFC3339))
	}
	fix := e.Fix
	if fix == "" {
		fix = fmt.Sprintf("if node %s is gone for good, detach the volume from it", e.Holder.NodeID)
	}
	fmt.Fprintf(&b, ": a volume is held by one node at a time; it is free once %s releases it; %s", e.Holder.NodeID, fix)
	return b.String()
}

// Is makes a HeldError match ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// MountGuard is implemented by a provider whose hold on a volume can lapse while the node is between its attach
// and its mount (the local provider's claims have a lease; on AWS and GCE the attachment is the hold): BeforeMount
// confirms, right before the mount, that this node still holds volume id, as attached.
type MountGuard interface {
	BeforeMount(ctx context.Context, id string) error
}

// FormatIntents is implemented by providers that can record on a volume itself (a tag, a label, a file of the
// pool) that a node is about to format it. FormatAndMount records the intent before mkfs and removes it once the
// filesystem is made and before it is mounted, so that a volume found with the intent still there was never
// mounted since: whatever an interrupted mkfs left on it (blocks but no signature, or a filesystem never mounted)
// is formatted again rather than refused for ever, by whichever node holds the volume next. The intent must be
// on the volume, not on the node: the volume may be attached to another node before the format is done.
//
// An intent is durable once BeginFormat returns (on disk and fsynced, or acknowledged by the cloud's API).
type FormatIntents interface {
	// FormatIntent returns the node that recorded a format intent on volume id; "" when the volume carries none.
	FormatIntent(ctx context.Context, id string) (nodeID string, err error)
	// BeginFormat records Node()'s intent to format volume id, which this node holds.
	BeginFormat(ctx context.Context, id string) error
	// EndFormat removes the intent from volume id (whichever node recorded it); none is not an error.
	EndFormat(ctx context.Context, id string) error
}
