package nodetasks

import (
	"context"
	"errors"

	"kubeup.dev/kubeup/engine"
)

// FormatAndMount is a block device mounted as a filesystem. The device is formatted only when it holds neither
// a filesystem nor a partition table; it is mounted by UUID. A different device at the mount point is refused.
type FormatAndMount struct {
	// MountPoint is the absolute path on the node the filesystem is mounted at, and the task's name.
	MountPoint string
	// Device is a device path ("/dev/loop3", "/dev/nvme1n1") or a cloud disk name resolved through
	// /dev/disk/by-id: an EBS volume id ("vol-0abc...", found as nvme-Amazon_Elastic_Block_Store_vol0abc...) or
	// a GCE disk's device name (found as google-NAME).
	Device string
	// FSType is the filesystem to create on a blank device and to expect on a formatted one (ext4 when nil).
	FSType *string
	// Options are mount options, such as "noatime".
	Options []string `kubeup:"set,nilempty"`
	// UUID is the filesystem's UUID: set by Find, or by Render after formatting.
	UUID *string `kubeup:"output"`
	// After orders the mount after other tasks, such as the attachment of the volume.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*FormatAndMount, *Node] = (*FormatAndMount)(nil)
	_ engine.Renderer[*FormatAndMount, *Node] = (*FormatAndMount)(nil)
)

func (m *FormatAndMount) Key() engine.Key {
	return engine.Key{Type: "FormatAndMount", Name: m.MountPoint}
}
func (m *FormatAndMount) Deps() []engine.Task { return m.After }

func (m *FormatAndMount) Find(ctx context.Context, n *Node) (*FormatAndMount, error) {
	return nil, errors.New("not implemented yet")
}

func (m *FormatAndMount) CheckChanges(actual, expected, changes *FormatAndMount) error {
	return nil
}

func (m *FormatAndMount) Render(ctx context.Context, n *Node, actual, expected, changes *FormatAndMount) error {
	return errors.New("not implemented yet")
}
