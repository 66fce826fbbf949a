package volumetasks

import (
	"context"
	"errors"
	"fmt"
	"unicode"

	"kubeup.dev/kubeup/engine"
)

// AttachKeyType is the type of an Attach task's key: "VolumeAttach/<id>".
const AttachKeyType = "VolumeAttach"

// Attach is a volume claimed by this node and attached to it: key "VolumeAttach/<id>". Find asks the provider
// where the volume is attached on this node; Render claims and attaches it. A volume another node holds is a
// terminal error that names the holder (ErrHeld): the node waits for it, or takes another volume, in a later
// round. A volume attached to this node and to others at once (see Contested) is not ready while this node won it
// and the others' attachments are there, and terminal when this node lost it. Attach never detaches: releasing a
// volume is the provider's Detach, or a lost attachment's Detach task.
type Attach[C World] struct {
	// VolumeID is the provider's id of the volume, and the task's name.
	VolumeID string
	// Device is the device the volume is attached as on this node ("/dev/loop3", "/dev/nvme1n1"): set by Find
	// when it is attached already, or by Render.
	Device *string `kubeup:"output"`

	// prefetched is the device Prefetch found, for the first Find.
	prefetched *string
}

func (a *Attach[C]) Key() engine.Key     { return engine.Key{Type: AttachKeyType, Name: a.VolumeID} }
func (a *Attach[C]) Deps() []engine.Task { return nil }

// APIClass puts attachments in the "volumes" class: they share its concurrency limit.
func (a *Attach[C]) APIClass() string { return "volumes" }

// AttachedDevice returns the device the volume is attached as, once Find or Render has set it; "" before. It is
// what a nodetasks.FormatAndMount that takes this task as its Attachment mounts.
func (a *Attach[C]) AttachedDevice() string {
	if a.Device == nil {
		return ""
	}
	return *a.Device
}

// Validate requires a volume id: printable, without spaces or '/'.
func (a *Attach[C]) Validate() error {
	if a.VolumeID == "" {
		return errors.New("field VolumeID is required: the provider's id of the volume to attach")
	}
	for _, r := range a.VolumeID {
		if r == '/' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("field VolumeID: %q is not a volume id: it has %q", a.VolumeID, r)
		}
	}
	return nil
}

// Prefetch asks the provider, before the graph runs, which device the volume is attached as on this node ("":
// none), as Find does, and keeps the answer for the first Find: a graph builder that must know it (protokube, to
// tell whether this very volume is the one mounted at its mount point) costs the provider no second call. A Find
// the engine runs again asks the provider; an error is not kept.
func (a *Attach[C]) Prefetch(ctx context.Context, world C) (device string, err error) {
	dev, err := a.attached(ctx, world)
	if err != nil {
		return "", err
	}
	a.prefetched = &dev
	return dev, nil
}

// attached asks the provider which device the volume is attached as on this node.
func (a *Attach[C]) attached(ctx context.Context, world C) (string, error) {
	dev, err := world.VolumeProvider().Attached(ctx, a.VolumeID)
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", a.VolumeID, err)
	}
	return dev, nil
}

// Find returns the attachment when the volume is attached to this node, nil when it is not (not claimed here,
// or claimed but not attached yet).
func (a *Attach[C]) Find(ctx context.Context, world C) (*Attach[C], error) {
	var dev string
	if a.prefetched != nil {
		dev, a.prefetched = *a.prefetched, nil
	} else {
		var err error
		if dev, err = a.attached(ctx, world); err != nil {
			return nil, err
		}
	}
	if dev == "" {
		return nil, nil
	}
	return &Attach[C]{VolumeID: a.VolumeID, Device: &dev}, nil
}

// CheckChanges has nothing to refuse beyond Validate's rules: an attachment is made or is there.
func (a *Attach[C]) CheckChanges(actual, expected, changes *Attach[C]) error {
	return expected.Validate()
}

// Render claims the volume and attaches it, and records the device. A volume another node holds is a terminal
// error that matches ErrHeld.
func (a *Attach[C]) Render(ctx context.Context, world C, actual, expected, changes *Attach[C]) error {
	p := world.VolumeProvider()
	dev, err := p.Attach(ctx, expected.VolumeID)
	switch {
	case errors.Is(err, ErrHeld):
		return engine.Terminal(fmt.Errorf("attaching volume %s to node %s: %w", expected.VolumeID, p.Node().NodeID, err))
	case err != nil:
		return fmt.Errorf("attaching volume %s to node %s: %w", expected.VolumeID, p.Node().NodeID, err)
	case dev == "":
		return fmt.Errorf("attaching volume %s to node %s: the provider named no device", expected.VolumeID, p.Node().NodeID)
	}
	expected.Device = &dev
	engine.Logger(ctx).Info("attached volume", "volume", expected.VolumeID, "device", dev)
	return nil
}
