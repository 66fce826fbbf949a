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
	f, err := os.Open(dev)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sb := make([]byte, 1024)
	if n, err := f.ReadAt(sb, 1024); n < len(sb) || err != nil {
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
