package nodetasks

import "testing"

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
