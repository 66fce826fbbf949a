package nodetasks

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

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
			return "", fmt.Errorf("resolving device %s: %w", name, classify(err))
		}
		return p, nil
	}
	return "", nil
}

// deviceNumber returns the device number of a block device node.
func deviceNumber(dev string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return 0, fmt.Errorf("device %s: %w", dev, classify(err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, fmt.Errorf("%s is not a block device", dev)
	}
	return st.Rdev, nil
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	dev        uint64 // major:minor of the mounted filesystem
	root       string // the directory of the filesystem mounted there: "/" unless a bind mount of a part of it
	mountPoint string
	fsType     string
	source     string
	options    []string // per-mount and superblock options
}

// mountAt returns the mount on top at mountPoint (a path in this process's mount namespace), or nil.
func mountAt(mountPoint string) (*mountEntry, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	var top *mountEntry
	for _, e := range parseMountinfo(b) {
		if e.mountPoint == mountPoint {
			top = &e
		}
	}
	return top, nil
}

// parseMountinfo reads proc(5)'s mountinfo: ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE
// SOURCE SUPEROPTIONS, with spaces and the like escaped as octal.
func parseMountinfo(b []byte) []mountEntry {
	var out []mountEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 6 || sep < 0 || len(f) < sep+4 {
			continue
		}
		majmin := strings.SplitN(f[2], ":", 2)
		if len(majmin) != 2 {
			continue
		}
		major, err1 := strconv.ParseUint(majmin[0], 10, 32)
		minor, err2 := strconv.ParseUint(majmin[1], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, mountEntry{
			dev:        unix.Mkdev(uint32(major), uint32(minor)),
			root:       mountinfo.Unescape(f[3]),
			mountPoint: mountinfo.Unescape(f[4]),
			fsType:     f[sep+1],
			source:     mountinfo.Unescape(f[sep+2]),
			options:    append(strings.Split(f[5], ","), strings.Split(f[sep+3], ",")...),
		})
	}
	return out
}

// userspaceOptions are mount(8) options that never show in mountinfo.
var userspaceOptions = map[string]bool{
	"defaults": true, "auto": true, "noauto": true, "nofail": true, "_netdev": true, "user": true, "users": true,
	"nouser": true, "owner": true, "group": true,
}

// presentOptions returns the options of want that the mount has (or that never show), in want's order: all of
// want when the mount is as asked.
func presentOptions(want []string, m *mountEntry) []string {
	var out []string
	for _, o := range want {
		if userspaceOptions[o] || strings.HasPrefix(o, "x-") || strings.HasPrefix(o, "comment=") {
			out = append(out, o)
			continue
		}
		for _, have := range m.options {
			if have == o {
				out = append(out, o)
				break
			}
		}
	}
	return out
}
