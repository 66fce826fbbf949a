package volumetasks

import (
	"context"
	"errors"
	"fmt"

	"kubeup.dev/kubeup/engine"
)

// DetachKeyType is the type of a Detach task's key: "VolumeDetach/<id>".
const DetachKeyType = "VolumeDetach"

// Detach is this node's attachment of a volume it lost to another node (see Contested), which must go: key
// "VolumeDetach/<id>". Find asks the provider whether this node still holds a losing attachment of the volume,
// and what uses its device here; Render detaches it (Contested.DetachLost), which the provider does only while
// it still lost and nothing here uses the device. A device mounted or held open here is a terminal error that
// names the mount point, in a dry run too: nothing is detached. An attachment that did not lose (this node is
// the volume's only holder, or ranks first) is never detached: the task is done.
type Detach[C World] struct {
	// VolumeID is the provider's id of the volume, and the task's name.
	VolumeID string
	// Attached is what Find saw: this node holds an attachment of the volume that lost it. The task wants it
	// false.
	Attached bool

	// loss is what Find saw of the attachment.
	loss *Loss
}

var (
	_ engine.Resource[*Detach[World], World] = (*Detach[World])(nil)
	_ engine.Renderer[*Detach[World], World] = (*Detach[World])(nil)
	_ engine.Classed                         = (*Detach[World])(nil)
	_ engine.Validator                       = (*Detach[World])(nil)
)

func (d *Detach[C]) Key() engine.Key     { return engine.Key{Type: DetachKeyType, Name: d.VolumeID} }
func (d *Detach[C]) Deps() []engine.Task { return nil }

// APIClass puts detachments in the "volumes" class, with attachments.
func (d *Detach[C]) APIClass() string { return "volumes" }

// Validate requires a volume id as Attach does, and Attached false.
func (d *Detach[C]) Validate() error {
	if err := (&Attach[C]{VolumeID: d.VolumeID}).Validate(); err != nil {
		return err
	}
	if d.Attached {
		return errors.New("field Attached: a Detach task wants the attachment gone (leave Attached false)")
	}
	return nil
}

// contested returns the world's provider as a Contested: one that is not cannot have lost a volume.
func (d *Detach[C]) contested(world C) (Contested, error) {
	p, ok := world.VolumeProvider().(Contested)
	if !ok {
		return nil, engine.Terminal(fmt.Errorf("volume %s: the volume provider attaches a volume to one node at a time: no attachment of it can have lost a race", d.VolumeID))
	}
	return p, nil
}

// Find reports whether this node holds an attachment of the volume that lost it. It never returns nil: no such
// attachment is the task done.
func (d *Detach[C]) Find(ctx context.Context, world C) (*Detach[C], error) {
	p, err := d.contested(world)
	if err != nil {
		return nil, err
	}
	loss, err := p.Lost(ctx, d.VolumeID)
	if err != nil {
		return nil, fmt.Errorf("volume %s: %w", d.VolumeID, err)
	}
	return &Detach[C]{VolumeID: d.VolumeID, Attached: loss != nil, loss: loss}, nil
}

// CheckChanges refuses to detach an attachment whose device is mounted or held open on this machine, naming
// where: in a dry run as in an apply.
func (d *Detach[C]) CheckChanges(actual, expected, changes *Detach[C]) error {
	if actual != nil && actual.loss != nil && actual.loss.Use.InUse() {
		return actual.loss.Refusal()
	}
	return nil
}

// Render detaches this node's losing attachment through the provider, which checks again, right before it
// detaches, that it still lost and that nothing here uses it.
func (d *Detach[C]) Render(ctx context.Context, world C, actual, expected, changes *Detach[C]) error {
	p, err := d.contested(world)
	if err != nil {
		return err
	}
	if err := p.DetachLost(ctx, expected.VolumeID); err != nil {
		return fmt.Errorf("detaching this node's attachment of volume %s, which another node won: %w", expected.VolumeID, err)
	}
	var winner string
	if actual != nil && actual.loss != nil {
		winner = actual.loss.Winner.NodeID
	}
	engine.Logger(ctx).Info("detached a volume another node won", "volume", expected.VolumeID, "winner", winner)
	return nil
}
