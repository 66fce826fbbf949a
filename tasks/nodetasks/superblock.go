package nodetasks

import (
	"encoding/binary"
	"fmt"
	"os"
)

// extUUID reads the UUID of the ext2/3/4 filesystem on dev from its superblock (1024 bytes in: the magic 0xEF53
// at 0x38, the UUID at 0x68), as blkid prints it. ok is false when dev cannot be read or holds no ext superblock.
// It only reads: FormatAndMount uses it for a filesystem the kernel has mounted, where blkid's probe has nothing
// to decide.
func extUUID(dev string) (uuid string, ok bool) {
	sb, ok := readSuperblock(dev)
	if !ok {
		return "", false
	}
	return parseExtSuperblock(sb)
}

// parseExtSuperblock returns the UUID of an ext2/3/4 superblock (its first 1024 bytes).
func parseExtSuperblock(sb []byte) (string, bool) {
	if len(sb) < 0x78 || binary.LittleEndian.Uint16(sb[0x38:]) != 0xEF53 {
		return "", false
	}
	u := sb[0x68:0x78]
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), true
}

// extNeverMounted reports whether dev holds an ext2/3/4 filesystem that was never mounted: a superblock whose
// last mount time (s_mtime at 0x2C, and its high byte s_mtime_hi at 0x275), mount count (s_mnt_count at 0x34)
// and last mount point (s_last_mounted at 0x88) are all zero, as mke2fs leaves them. A read-write mount sets the
// mount time and e2fsck does not clear it, so only a filesystem nothing was ever written to through the kernel
// reads as never mounted. false when dev cannot be read or holds no ext superblock.
func extNeverMounted(dev string) bool {
	sb, ok := readSuperblock(dev)
	return ok && superblockNeverMounted(sb)
}

// readSuperblock reads the first 1024 bytes of the ext superblock of dev (1024 bytes in); false when dev cannot
// be read.
func readSuperblock(dev string) ([]byte, bool) {
	f, err := os.Open(dev)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	sb := make([]byte, 1024)
	if n, err := f.ReadAt(sb, 1024); n < len(sb) || err != nil {
		return nil, false
	}
	return sb, true
}

// superblockNeverMounted is extNeverMounted of a superblock's first 1024 bytes.
func superblockNeverMounted(sb []byte) bool {
	if _, ok := parseExtSuperblock(sb); !ok || len(sb) < 0x276 {
		return false
	}
	return binary.LittleEndian.Uint32(sb[0x2C:]) == 0 && sb[0x275] == 0 &&
		binary.LittleEndian.Uint16(sb[0x34:]) == 0 && firstNonZero(sb[0x88:0xC8]) < 0
}

// extAsMade reports whether dev holds an ext2/3/4 filesystem whose superblock counts no inode in use beyond what
// mke2fs makes (superblockAsMade): nothing was put in it, mounted or not (mke2fs -d, debugfs -w and e2tools
// write files without a mount, and leave the mount fields zero). false when dev cannot be read or holds no ext
// superblock.
func extAsMade(dev string) bool {
	sb, ok := readSuperblock(dev)
	return ok && superblockAsMade(sb)
}

// superblockAsMade is extAsMade of a superblock's first 1024 bytes: its free inodes (s_free_inodes_count at
// 0x10) are its inodes (s_inodes_count at 0x00) but the reserved ones and lost+found, that is all but the first
// non-reserved inode's number (s_first_ino at 0x54; 11 for revision 0, s_rev_level at 0x4C), as mke2fs leaves
// them. A file written offline uses an inode more.
func superblockAsMade(sb []byte) bool {
	if _, ok := parseExtSuperblock(sb); !ok || len(sb) < 0x58 {
		return false
	}
	inodes, free := binary.LittleEndian.Uint32(sb[0x00:]), binary.LittleEndian.Uint32(sb[0x10:])
	first := uint32(11)
	if binary.LittleEndian.Uint32(sb[0x4C:]) >= 1 {
		first = binary.LittleEndian.Uint32(sb[0x54:])
	}
	return first >= 11 && inodes > first && free == inodes-first
}
