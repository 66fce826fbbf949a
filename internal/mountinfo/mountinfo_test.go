package mountinfo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/plain`:            `/mnt/plain`,
		`/mnt/with\040space`:    `/mnt/with space`,
		`/mnt/tab\011and\012nl`: "/mnt/tab\tand\nnl",
		`/mnt/back\134slash`:    `/mnt/back\slash`,
		`/mnt/short\04`:         `/mnt/short\04`, // not three digits: kept as it is
		`/mnt/not\999octal`:     `/mnt/not\999octal`,
		`/mnt/end\040`:          `/mnt/end `,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	in := "22 27 0:21 / /proc rw,relatime - proc proc rw\n" +
		"42 27 7:3 / /mnt/etcd\\040main rw,noatime shared:1 - ext4 /dev/loop3 rw,errors=remount-ro\n" +
		"43 27 7:3 /member /mnt/bound rw - ext4 /dev/loop3 rw\n" +
		"garbage\n"
	want := []Mount{
		{Major: 0, Minor: 21, Root: "/", MountPoint: "/proc", FSType: "proc", Source: "proc", Options: []string{"rw", "relatime", "rw"}},
		{Major: 7, Minor: 3, Root: "/", MountPoint: "/mnt/etcd main", FSType: "ext4", Source: "/dev/loop3",
			Options: []string{"rw", "noatime", "rw", "errors=remount-ro"}},
		{Major: 7, Minor: 3, Root: "/member", MountPoint: "/mnt/bound", FSType: "ext4", Source: "/dev/loop3", Options: []string{"rw", "rw"}},
	}
	got := Parse(in)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if got[1].Number() != "7:3" || got[1].Dev() != unix.Mkdev(7, 3) || !got[1].HasDevice() || got[0].HasDevice() {
		t.Errorf("Number, Dev, HasDevice of %+v, %+v", got[1], got[0])
	}
	if top := Top(append(got, Mount{Major: 8, Minor: 1, MountPoint: "/mnt/bound"}), "/mnt/bound"); top == nil || top.Major != 8 {
		t.Errorf("Top = %+v, want the later mount", top)
	}
	if Top(got, "/nowhere") != nil {
		t.Error("Top of a point with no mount is not nil")
	}
}
