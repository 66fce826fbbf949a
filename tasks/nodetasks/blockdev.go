package nodetasks

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/mountinfo"
)

// resolveDevice turns a device name into the path of its device node: a path as is (symlinks such as
// /dev/disk/by-id/... followed), a cloud disk name through n.diskByID. It returns "" when the device is not
// there (yet): a volume that is still attaching.
func (n *Node) resolveDevice(name string) (string, error) {
	var candidates []string
	switch {
	case strings.HasPrefix(name, "/"):
		candidates = []string{name}
	case strings.HasPrefix(name, "vol-"):
		// An EBS volume on a Nitro instance is an NVMe device whose serial is the volume id without its dash.
		candidates = []string{filepath.Join(n.diskByID, "nvme-Amazon_Elastic_Block_Store_"+strings.ReplaceAll(name, "-", ""))}
	default:
		// A GCE persistent disk, by its device name.
		candidates = []string{
			filepath.Join(n.diskByID, "google-"+name),
			filepath.Join(n.diskByID, "scsi-0Google_PersistentDisk_"+name),
		}
	}
	for _, c := range candidates {
		p, err := filepath.EvalSymlinks(c)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("resolving device %s: %w", name, engine.FileError(err))
		}
		return p, nil
	}
	return "", nil
}

// deviceNumber returns the device number of a block device node.
func deviceNumber(dev string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return 0, fmt.Errorf("device %s: %w", dev, engine.FileError(err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, fmt.Errorf("%s is not a block device", dev)
	}
	return st.Rdev, nil
}

// mountAt returns the mount on top at mountPoint (a path in this process's mount namespace), or nil.
func mountAt(mountPoint string) (*mountinfo.Mount, error) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return nil, err
	}
	return mountinfo.Top(mounts, mountPoint), nil
}

// userspaceOptions are mount(8) options that never show in mountinfo.
var userspaceOptions = map[string]bool{
	"defaults": true, "auto": true, "noauto": true, "nofail": true, "_netdev": true, "user": true, "users": true,
	"nouser": true, "owner": true, "group": true,
}

// presentOptions returns the options of want that the mount has (or that never show), in want's order: all of
// want when the mount is as asked.
func presentOptions(want []string, m *mountinfo.Mount) []string {
	var out []string
	for _, o := range want {
		if userspaceOptions[o] || strings.HasPrefix(o, "x-") || strings.HasPrefix(o, "comment=") {
			out = append(out, o)
			continue
		}
		for _, have := range m.Options {
			if have == o {
				out = append(out, o)
				break
			}
		}
	}
	return out
}
