package nodetasks

import (
	"encoding/binary"
	"testing"
)

func TestParseExtSuperblock(t *testing.T) {
	sb := make([]byte, 1024)
	sb[0x38], sb[0x39] = 0x53, 0xEF
	copy(sb[0x68:], []byte{0xd4, 0xdf, 0x58, 0x23, 0x33, 0xef, 0x4f, 0x12, 0xad, 0x35, 0xba, 0x30, 0xef, 0xc6, 0x26, 0xac})
	other := make([]byte, 1024)
	copy(other[0x68:], sb[0x68:0x78])
	for _, tt := range []struct {
		name   string
		sb     []byte
		want   string
		wantOK bool
	}{
		{name: "ext4", sb: sb, want: "d4df5823-33ef-4f12-ad35-ba30efc626ac", wantOK: true},
		{name: "no magic", sb: other},
		{name: "short", sb: sb[:0x70]},
	} {
		got, ok := parseExtSuperblock(tt.sb)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: parseExtSuperblock = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestSuperblockNeverMounted(t *testing.T) {
	fresh := func() []byte {
		sb := make([]byte, 1024)
		sb[0x38], sb[0x39] = 0x53, 0xEF
		sb[0x30] = 7 // s_wtime: mke2fs sets the write time
		return sb
	}
	set := func(off int, b byte) []byte {
		sb := fresh()
		sb[off] = b
		return sb
	}
	for _, tt := range []struct {
		name string
		sb   []byte
		want bool
	}{
		{name: "as mke2fs leaves it", sb: fresh(), want: true},
		{name: "mounted (s_mtime)", sb: set(0x2C, 1)},
		{name: "mounted after 2038 (s_mtime_hi)", sb: set(0x275, 1)},
		{name: "mounted, then e2fsck cleared the count but not the time", sb: set(0x2F, 0x6a)},
		{name: "mount count", sb: set(0x34, 1)},
		{name: "last mounted at", sb: set(0x88, '/')},
		{name: "no magic", sb: set(0x38, 0)},
		{name: "short", sb: fresh()[:0x200]},
	} {
		if got := superblockNeverMounted(tt.sb); got != tt.want {
			t.Errorf("%s: superblockNeverMounted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSuperblockAsMade: a superblock counts as mke2fs made it when its free inodes are all but the reserved ones
// and lost+found; a file written offline (mke2fs -d, debugfs) uses one more.
func TestSuperblockAsMade(t *testing.T) {
	sb := func(inodes, free, rev, first uint32) []byte {
		b := make([]byte, 1024)
		b[0x38], b[0x39] = 0x53, 0xEF
		binary.LittleEndian.PutUint32(b[0x00:], inodes)
		binary.LittleEndian.PutUint32(b[0x10:], free)
		binary.LittleEndian.PutUint32(b[0x4C:], rev)
		binary.LittleEndian.PutUint32(b[0x54:], first)
		return b
	}
	for _, tt := range []struct {
		name string
		sb   []byte
		want bool
	}{
		{name: "as mke2fs leaves it (16384 inodes)", sb: sb(16384, 16373, 1, 11), want: true},
		{name: "a file written offline", sb: sb(16384, 16372, 1, 11)},
		{name: "revision 0: first inode 11", sb: sb(16384, 16373, 0, 0), want: true},
		{name: "a larger first inode", sb: sb(16384, 16364, 1, 20), want: true},
		{name: "a first inode below the reserved ones", sb: sb(16384, 16382, 1, 2)},
		{name: "no magic", sb: func() []byte { b := sb(16384, 16373, 1, 11); b[0x38] = 0; return b }()},
		{name: "short", sb: sb(16384, 16373, 1, 11)[:0x50]},
	} {
		if got := superblockAsMade(tt.sb); got != tt.want {
			t.Errorf("%s: superblockAsMade = %v, want %v", tt.name, got, tt.want)
		}
	}
}
