package nodetasks

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// MountedAt reports whether the filesystem mounted on top at the node path mountPoint is the ext2/3/4 filesystem
// of device (a device's path, as a volume attachment reports it), whole, and returns its UUID: the mount's device
// number is the device's, the mount shows the filesystem's root (not a bind mount of a directory in it), and the
// filesystem seen through the mount point has the UUID of the device's superblock (statfs's f_fsid of an ext
// filesystem is made of its UUID). false, without an error, when nothing is mounted there, something else is,
// or the device is not there. It only reads: protokube asks it before it writes etcd's manifest for a volume.
func (n *Node) MountedAt(mountPoint, device string) (uuid string, ok bool, err error) {
	dev, err := n.resolveDevice(device)
	if err != nil || dev == "" {
		return "", false, err
	}
	devNum, err := deviceNumber(dev)
	if err != nil {
		return "", false, err
	}
	dir, mp, err := n.openMountPoint(mountPoint, false)
	if err != nil || dir == nil {
		return "", false, err
	}
	defer dir.Close()
	mounted, err := mountAt(mp)
	if err != nil || mounted == nil || mounted.Dev() != devNum || mounted.Root != "/" {
		return "", false, err
	}
	sb, ok := readSuperblock(dev)
	if !ok {
		return "", false, nil
	}
	if uuid, ok = parseExtSuperblock(sb); !ok {
		return "", false, nil
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(dir.Fd()), &st); err != nil {
		return "", false, fmt.Errorf("mount point %s: %w", mountPoint, err)
	}
	if st.Fsid != extFsid(sb[0x68:0x78]) {
		return "", false, nil
	}
	return uuid, true, nil
}

// extFsid is the f_fsid statfs(2) reports for an ext2/3/4 filesystem whose superblock's UUID bytes are u: its
// first and second 32-bit little-endian words, each XORed with the third and the fourth.
func extFsid(u []byte) unix.Fsid {
	w := func(i int) int32 { return int32(binary.LittleEndian.Uint32(u[4*i:])) }
	return unix.Fsid{Val: [2]int32{w(0) ^ w(2), w(1) ^ w(3)}}
}
