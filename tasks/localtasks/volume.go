package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"

	"kubeup.dev/kubeup/engine"
)

// Volume is a volume of the local provider's pool: a sparse disk image that holds, for example, one etcd
// member's data. Its key is "LocalVolume/NAME".
//
// A device volume (a bare-metal disk whose sidecar an operator wrote by hand, VolumeInfo.Device) is found as
// existing, and its tags are managed as any volume's; it is never created or grown. It stands for whatever
// local type the task asks ("sparse", the model's default, or "device"), so it reads as that type; a task whose
// SizeGB is not the sidecar's is a terminal error that says how to make them agree.
type Volume struct {
	// Name names the volume, its files in the pool, and the task: "a.etcd-main.demo.example.com". Lowercase
	// letters, digits, '.', '-' and '_'.
	Name string
	// Zone is the zone the volume belongs to, a label such as "local-a". Required to create; cannot change.
	Zone *string
	// SizeGB is the size in GiB. Required to create; it may grow, never shrink.
	SizeGB *int32
	// VolumeType is "sparse" (VolumeTypeSparse), the default, or "device" (VolumeTypeDevice: a volume that must
	// exist already, a device named by its sidecar). It cannot change.
	VolumeType *string
	// Tags are compared as a whole map: a tag removed from the task is removed from the volume, and nil means
	// no tags. Tags are how a cluster finds what it owns (kubernetes.io/cluster/NAME=owned).
	Tags map[string]string `kubeup:"nilempty"`
}

var (
	_ engine.Resource[*Volume, *Cloud] = (*Volume)(nil)
	_ engine.Renderer[*Volume, *Cloud] = (*Volume)(nil)
)

// VolumeKeyType is the type of a Volume's key.
const VolumeKeyType = "LocalVolume"

func (v *Volume) Key() engine.Key     { return engine.Key{Type: VolumeKeyType, Name: v.Name} }
func (v *Volume) Deps() []engine.Task { return nil }

// Find reads the volume's sidecar; nil when the volume does not exist, or when its name cannot be a volume's
// (CheckChanges then says why).
func (v *Volume) Find(ctx context.Context, c *Cloud) (*Volume, error) {
	if validateVolumeName(v.Name) != nil {
		return nil, nil
	}
	info, err := c.Pool.Get(ctx, v.Name)
	if err != nil || info == nil {
		return nil, err
	}
	typ := info.VolumeType
	if info.Device != "" {
		if v.SizeGB != nil && *v.SizeGB != info.SizeGB {
			return nil, engine.Terminal(fmt.Errorf("volume %s is the device %s, of %d GB, and the cluster asks for %d GB: kubeup never "+
				"grows or shrinks a device: if the device holds at least %d GiB, set sizeGB to %d in %s; else ask for %d GB in the cluster spec",
				info.Name, info.Device, info.SizeGB, *v.SizeGB, *v.SizeGB, *v.SizeGB, c.Pool.sidecarPath(info.Name), info.SizeGB))
		}
		typ = deviceReadsAs(v.VolumeType)
	}
	return &Volume{
		Name:       info.Name,
		Zone:       &info.Zone,
		SizeGB:     &info.SizeGB,
		VolumeType: &typ,
		Tags:       info.Tags, // nil when there are none, as a task states it
	}, nil
}

// deviceReadsAs is the type a device volume reads as, for a task that asks for type want: the local type it asks
// (a device stands for the image kubeup would make), else "device". Another type is CheckChanges' to refuse.
func deviceReadsAs(want *string) string {
	if want != nil && *want == VolumeTypeSparse {
		return VolumeTypeSparse
	}
	return VolumeTypeDevice
}

// CheckChanges requires a valid name, Zone and SizeGB to create, and refuses to change the zone or the type, or
// to shrink the volume.
func (v *Volume) CheckChanges(actual, expected, changes *Volume) error {
	if err := validateVolumeName(expected.Name); err != nil {
		return fmt.Errorf("field Name: %w", err)
	}
	if expected.SizeGB != nil && *expected.SizeGB <= 0 {
		return fmt.Errorf("field SizeGB of volume %s: %d is not a size: give a positive number of GiB",
			expected.Name, *expected.SizeGB)
	}
	if expected.Zone != nil && *expected.Zone == "" {
		return fmt.Errorf("field Zone of volume %s is empty: set it, or leave it nil to keep the volume's zone", expected.Name)
	}
	if t := expected.VolumeType; t != nil && *t != VolumeTypeSparse && *t != VolumeTypeDevice {
		return fmt.Errorf("field VolumeType of volume %s: %q is not a local volume type: use %q",
			expected.Name, *t, VolumeTypeSparse)
	}
	if err := validateTags(expected.Name, expected.Tags); err != nil {
		return fmt.Errorf("field Tags: %w", err)
	}
	if actual == nil {
		if expected.Zone == nil {
			return fmt.Errorf("field Zone is required to create volume %s", expected.Name)
		}
		if expected.SizeGB == nil {
			return fmt.Errorf("field SizeGB is required to create volume %s", expected.Name)
		}
		if t := expected.VolumeType; t != nil && *t == VolumeTypeDevice {
			return fmt.Errorf("volume %s of type %q does not exist: kubeup never makes a device volume: write its sidecar NAME.json "+
				"in the pool (name, zone, sizeGB, volumeType \"device\", device: the block device's path)", expected.Name, VolumeTypeDevice)
		}
		return nil
	}
	if changes.Zone != nil {
		return fmt.Errorf("field Zone of volume %s cannot change from %s to %s: a volume stays in its zone; "+
			"delete the volume to make a new one (its data is lost), or keep zone %s",
			expected.Name, *actual.Zone, *expected.Zone, *actual.Zone)
	}
	if changes.VolumeType != nil {
		return fmt.Errorf("field VolumeType of volume %s cannot change from %s to %s",
			expected.Name, *actual.VolumeType, *expected.VolumeType)
	}
	if changes.SizeGB != nil && *expected.SizeGB < *actual.SizeGB {
		return fmt.Errorf("field SizeGB: volume %s cannot shrink from %d GB to %d GB: set SizeGB to %d or more",
			expected.Name, *actual.SizeGB, *expected.SizeGB, *actual.SizeGB)
	}
	return nil
}

// Render creates the volume (a sparse image, then its sidecar), or grows it and replaces its tags in one write of
// its sidecar. The volume must still be what Find saw: one that another process created, changed or deleted
// since is a conflict (ErrConflict), and nothing of it is changed.
func (v *Volume) Render(ctx context.Context, c *Cloud, actual, expected, changes *Volume) error {
	log := engine.Logger(ctx)
	if actual == nil {
		info := VolumeInfo{
			Name:       expected.Name,
			Zone:       *expected.Zone,
			SizeGB:     *expected.SizeGB,
			VolumeType: VolumeTypeSparse,
			Tags:       expected.Tags,
		}
		err := c.Pool.Create(ctx, info)
		if errors.Is(err, fs.ErrExist) {
			return conflict("volume %s was created by someone else while this update ran (another `kubeup update cluster --yes`?): "+
				"nothing of it was changed; run `kubeup update cluster` again to see what is left", expected.Name)
		}
		if err != nil {
			return err
		}
		log.Info("created volume", "zone", info.Zone, "sizeGB", info.SizeGB, "pool", c.Pool.Dir())
		return nil
	}
	// changes.Tags is nil both when the tags are equal and when they change to none: compare the whole maps.
	retag := !maps.Equal(actual.Tags, expected.Tags)
	err := c.Pool.update(ctx, expected.Name, func(now *VolumeInfo) error {
		nowType := now.VolumeType
		if now.Device != "" {
			nowType = deviceReadsAs(expected.VolumeType)
		}
		if now.Zone != *actual.Zone || now.SizeGB != *actual.SizeGB || nowType != *actual.VolumeType ||
			!maps.Equal(now.Tags, actual.Tags) {
			return conflict("volume %s was changed by someone else while this update ran (another `kubeup update cluster --yes`?): "+
				"nothing of it was changed; run `kubeup update cluster` again to see what is left", expected.Name)
		}
		if changes.SizeGB != nil {
			if err := c.Pool.growImage(now, *expected.SizeGB); err != nil {
				return err
			}
		}
		if retag {
			now.Tags = maps.Clone(expected.Tags)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return conflict("volume %s was deleted by someone else while this update ran (another `kubeup update cluster --yes`, or `kubeup delete cluster`?): "+
			"nothing was created; run `kubeup update cluster` again to see what is left", expected.Name)
	}
	if err != nil {
		return err
	}
	if changes.SizeGB != nil {
		log.Info("grew volume", "from", *actual.SizeGB, "to", *expected.SizeGB)
	}
	if retag {
		log.Info("tagged volume", "tags", expected.Tags)
	}
	return nil
}

// ErrConflict is matched (errors.Is) by the error of a task that finds the world changed by someone else between
// its Find and its Render, such as a volume that another `kubeup update cluster --yes` created meanwhile. Such an
// error is terminal, and the task changed nothing.
var ErrConflict = errors.New("changed by someone else")

// conflictError is a conflict with its own message; it matches ErrConflict.
type conflictError struct{ msg string }

func (e *conflictError) Error() string        { return e.msg }
func (e *conflictError) Is(target error) bool { return target == ErrConflict }

func conflict(format string, args ...any) error {
	return engine.Terminal(&conflictError{msg: fmt.Sprintf(format, args...)})
}
