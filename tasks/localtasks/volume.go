package localtasks

import (
	"context"
	"fmt"
	"maps"

	"kubeup.dev/kubeup/engine"
)

// Volume is a volume of the local provider's pool: a sparse disk image that holds, for example, one etcd
// member's data. Its key is "LocalVolume/NAME".
type Volume struct {
	// Name names the volume, its files in the pool, and the task: "a.etcd-main.demo.example.com". Lowercase
	// letters, digits, '.', '-' and '_'.
	Name string
	// Zone is the zone the volume belongs to, a label such as "local-a". Required to create; cannot change.
	Zone *string
	// SizeGB is the size in GiB. Required to create; it may grow, never shrink.
	SizeGB *int32
	// VolumeType is "sparse" (VolumeTypeSparse), the default. It cannot change.
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
	return &Volume{
		Name:       info.Name,
		Zone:       &info.Zone,
		SizeGB:     &info.SizeGB,
		VolumeType: &info.VolumeType,
		Tags:       info.Tags, // nil when there are none, as a task states it
	}, nil
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
	if t := expected.VolumeType; t != nil && *t != VolumeTypeSparse {
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

// Render creates the volume (a sparse image, then its sidecar), or grows it, or replaces its tags.
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
		if err := c.Pool.Create(ctx, info); err != nil {
			return err
		}
		log.Info("created volume", "zone", info.Zone, "sizeGB", info.SizeGB, "pool", c.Pool.Dir())
		return nil
	}
	if changes.SizeGB != nil {
		if err := c.Pool.Grow(ctx, expected.Name, *expected.SizeGB); err != nil {
			return err
		}
		log.Info("grew volume", "from", *actual.SizeGB, "to", *expected.SizeGB)
	}
	// changes.Tags is nil both when the tags are equal and when they change to none: compare the whole maps.
	if !maps.Equal(actual.Tags, expected.Tags) {
		if err := c.Pool.SetTags(ctx, expected.Name, expected.Tags); err != nil {
			return fmt.Errorf("tagging volume %s: %w", expected.Name, err)
		}
		log.Info("tagged volume", "tags", expected.Tags)
	}
	return nil
}
