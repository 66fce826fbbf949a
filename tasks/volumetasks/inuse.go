package volumetasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"kubeup.dev/kubeup/internal/mountinfo"
)

// ProcMountTable is this process's mount table, in proc(5)'s mountinfo format: where DevicesInUse looks unless
// told otherwise.
const ProcMountTable = "/proc/self/mountinfo"

// DeviceUse is what uses a volume's device on this machine.
type DeviceUse struct {
	// Mounts are where it is mounted, as the mount table shows it ("/mnt/master-vol-1 (/dev/nvme1n1)").
	Mounts []string
	// Busy says that the device is held open exclusively (open with O_EXCL says EBUSY): mounted, in this or
	// another mount namespace, a partition of it mounted, or held by device mapper, md or swap.
	Busy bool
}

// InUse reports whether anything uses the device.
func (u DeviceUse) InUse() bool { return len(u.Mounts) > 0 || u.Busy }

func (u DeviceUse) String() string {
	switch {
	case len(u.Mounts) > 0:
		return "mounted at " + strings.Join(u.Mounts, ", ")
	case u.Busy:
		return "held open exclusively (mounted in another mount namespace, a partition of it mounted, or used by device mapper, md or swap)"
	}
	return "not in use"
}

// fix says what a person does to stop what uses the device.
func (u DeviceUse) fix() string {
	var steps []string
	for _, m := range u.Mounts {
		at := m[:strings.LastIndex(m, " (")]
		steps = append(steps, "umount "+shellWord(at))
	}
	if len(steps) == 0 {
		steps = append(steps, "find what holds it: lsblk, findmnt, and ls /sys/class/block/<device>/holders in every mount namespace")
	}
	return strings.Join(steps, ", then ")
}

// shellWord is s as one word of a shell command a person can paste: quoted when it holds more than letters,
// digits and path punctuation.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// DevicesInUse returns what uses the devices (paths, symbolic links followed) on this machine: the mounts of
// mountTable (a file in mountinfo's format: ProcMountTable) whose device number is that of one of the devices,
// or whose source is one of the paths or what it resolves to; and whether one of the devices is held open
// exclusively. found are the devices that exist; one that does not is left out. An error: it cannot be told.
func DevicesInUse(mountTable string, devices []string) (use DeviceUse, found []string, err error) {
	sources := map[string]bool{}
	numbers := map[string]bool{} // "MAJOR:MINOR"
	var blocks []string
	for _, d := range devices {
		resolved, err := filepath.EvalSymlinks(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return DeviceUse{}, nil, fmt.Errorf("resolving device %s: %w", d, err)
		}
		found = append(found, d)
		sources[d], sources[resolved] = true, true
		num, ok, err := blockDeviceNumber(resolved)
		if err != nil {
			return DeviceUse{}, nil, err
		}
		if ok {
			numbers[num] = true
			if !slices.Contains(blocks, resolved) {
				blocks = append(blocks, resolved)
			}
		}
	}
	if len(found) == 0 {
		return DeviceUse{}, nil, nil
	}
	table, err := os.ReadFile(mountTable)
	if err != nil {
		return DeviceUse{}, nil, fmt.Errorf("reading the mount table: %w", err)
	}
	for _, m := range mountinfo.Parse(string(table)) {
		if numbers[m.Number()] || sources[m.Source] {
			use.Mounts = append(use.Mounts, fmt.Sprintf("%s (%s)", m.MountPoint, m.Source))
		}
	}
	for _, b := range blocks {
		busy, err := HeldExclusively(b)
		if err != nil {
			return DeviceUse{}, nil, err
		}
		use.Busy = use.Busy || busy
	}
	return use, found, nil
}
