// Package mountinfo reads /proc/PID/mountinfo (proc(5)): the one parser of the mount table, for the node tasks,
// the local provider and the e2e tests' clean-up alike.
package mountinfo

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is one line of the mount table: ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE
// SUPEROPTIONS.
type Mount struct {
	Major, Minor uint32 // the device number of the mounted filesystem (0:N: none behind it, as tmpfs)
	Root         string // the directory of the filesystem mounted there: "/" unless a bind mount of a part of it
	MountPoint   string
	FSType       string
	Source       string
	Options      []string // per-mount options, then the superblock's
}

// Dev is the mount's device number, as stat(2) gives a block device's st_rdev.
func (m *Mount) Dev() uint64 { return unix.Mkdev(m.Major, m.Minor) }

// Number is the device number as mountinfo and /sys/class/block/NAME/dev write it: "MAJOR:MINOR".
func (m *Mount) Number() string { return fmt.Sprintf("%d:%d", m.Major, m.Minor) }

// HasDevice reports whether a device is behind the mount (major number not 0: not tmpfs, proc, overlay...).
func (m *Mount) HasDevice() bool { return m.Major != 0 }

// Read returns this process's mount table, in its order (a later mount at a point is on top of an earlier).
func Read() ([]Mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	return Parse(string(b)), nil
}

// Parse reads a mount table in mountinfo's format. A line that does not parse is skipped.
func Parse(table string) []Mount {
	var out []Mount
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
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
		out = append(out, Mount{
			Major: uint32(major), Minor: uint32(minor),
			Root:       Unescape(f[3]),
			MountPoint: Unescape(f[4]),
			FSType:     f[sep+1],
			Source:     Unescape(f[sep+2]),
			Options:    append(strings.Split(f[5], ","), strings.Split(f[sep+3], ",")...),
		})
	}
	return out
}

// Top returns the mount on top at mountPoint in mounts, or nil.
func Top(mounts []Mount, mountPoint string) *Mount {
	var top *Mount
	for i := range mounts {
		if mounts[i].MountPoint == mountPoint {
			top = &mounts[i]
		}
	}
	return top
}

// Unescape undoes the kernel's escaping of a mountinfo field: a space, tab, newline or backslash in a path is
// written as a backslash and three octal digits ("\040" for a space).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
