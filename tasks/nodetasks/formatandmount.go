package nodetasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/sys/unix"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/mountinfo"
)

// FormatAndMount is a block device mounted as a filesystem. The device is formatted only when it holds neither
// a filesystem nor a partition table, and reads as zeros at both ends (see probe.go); it is mounted from the device
// node it probed, whose filesystem UUID it records, at the mount point resolved inside the node root. A different
// device at the mount point is refused.
//
// The device is either fixed (Device) or the one a volume attachment reports when the task runs (Attachment):
// every rule above holds for both.
type FormatAndMount struct {
	// MountPoint is the absolute path on the node the filesystem is mounted at, and the task's name.
	MountPoint string
	// Device is a device path ("/dev/loop3", "/dev/nvme1n1") or a cloud disk name resolved through
	// /dev/disk/by-id: an EBS volume id ("vol-0abc...", found as nvme-Amazon_Elastic_Block_Store_vol0abc...) or
	// a GCE disk's device name (found as google-NAME). Empty when Attachment names the device.
	Device string
	// FSType is the filesystem to create on a blank device and to expect on a formatted one. Find sets it to
	// "ext4" when nil, so that the dry run shows a format.
	FSType *string
	// Options are mount options, such as "noatime".
	Options []string `kubeup:"set,nilempty"`
	// UUID is the filesystem's UUID: set by Find, or by Render after formatting.
	UUID *string `kubeup:"output"`
	// After orders the mount after other tasks.
	After []engine.Task `kubeup:"-"`
	// Attachment, instead of Device, is the task that attaches the volume (volumetasks.Attach): the device is the
	// one it reports when this task runs. It is a dependency. Until it reports one (a dry run of a volume not
	// attached yet), Find sees no device and the dry run announces the format and mount.
	Attachment DeviceSource `kubeup:"-"`
	// Volume is the provider's id of the volume Attachment attaches: the format is journaled under it in the
	// node's FormatJournal, and the node's MountGuard confirms it is still held before the mount
	// (NodeOptions). Empty: neither (a fixed Device).
	Volume string `kubeup:"-"`

	found *probe // what Find saw on the device, for CheckChanges
}

// DeviceSource is a task that attaches a device, and says which once it has: volumetasks.Attach is one.
// AttachedDevice returns "" while the device is not attached (yet).
type DeviceSource interface {
	engine.Task
	AttachedDevice() string
}

var (
	_ engine.Resource[*FormatAndMount, *Node] = (*FormatAndMount)(nil)
	_ engine.Renderer[*FormatAndMount, *Node] = (*FormatAndMount)(nil)
)

func (m *FormatAndMount) Key() engine.Key {
	return engine.Key{Type: "FormatAndMount", Name: m.MountPoint}
}

// Deps are After, and the Attachment.
func (m *FormatAndMount) Deps() []engine.Task {
	if m.Attachment == nil {
		return m.After
	}
	return append(slices.Clip(m.After), m.Attachment)
}

// device returns the device to mount, as Device names it: Device, or what the Attachment reports now ("" while
// it reports nothing).
func (m *FormatAndMount) device() string {
	if m.Attachment != nil {
		return m.Attachment.AttachedDevice()
	}
	return m.Device
}

// attachedDevice returns the device the Attachment reports, checked as Validate checks Device; "" when it
// reports none yet.
func (m *FormatAndMount) attachedDevice() (string, error) {
	name := m.device()
	if m.Attachment == nil || name == "" {
		return name, nil
	}
	if err := checkDeviceName(fmt.Sprintf("Attachment (%s)", m.Attachment.Key()), name); err != nil {
		return "", engine.Terminal(err)
	}
	return name, nil
}

// DefaultFSType is the filesystem of a FormatAndMount whose FSType is nil.
const DefaultFSType = "ext4"

// Find probes the device and reads the mount table; nil when the device is not there (yet). The actual object
// has the filesystem the device holds (FSType nil: none), MountPoint "" when nothing is mounted there, and
// Device naming what is mounted there when it is another device.
func (m *FormatAndMount) Find(ctx context.Context, n *Node) (*FormatAndMount, error) {
	if m.FSType == nil {
		fsType := DefaultFSType
		m.FSType = &fsType
	}
	name, err := m.attachedDevice()
	if err != nil || name == "" {
		return nil, err // an Attachment that has not attached: nothing to look at yet
	}
	dev, err := n.resolveDevice(name)
	if err != nil || dev == "" {
		return nil, err
	}
	devNum, err := deviceNumber(dev)
	if err != nil {
		return nil, err
	}
	l := n.deviceLock(dev)
	l.Lock()
	defer l.Unlock()
	if actual := m.findMounted(n, dev, devNum); actual != nil {
		return actual, nil
	}
	pr, err := probeDevice(ctx, dev)
	if err != nil {
		return nil, err
	}
	// The dry run announces a format only when the apply would make it: the same assessment as Render's.
	v, _, err := m.assess(ctx, n, dev, pr, *m.FSType)
	if err != nil {
		return nil, err
	}
	if v == formatAgain {
		pr = probe{} // what an interrupted format left: it is formatted again, as a blank device is
	}
	actual := &FormatAndMount{MountPoint: m.MountPoint, Device: m.Device, found: &pr}
	if pr.fsType != "" {
		actual.FSType = &pr.fsType
	}
	if pr.uuid != "" {
		actual.UUID = &pr.uuid
	}
	dir, mp, err := n.openMountPoint(m.MountPoint, false)
	if err != nil {
		return nil, err
	}
	var mounted *mountinfo.Mount
	if dir != nil {
		dir.Close()
		if mounted, err = mountAt(mp); err != nil {
			return nil, err
		}
	}
	switch {
	case mounted == nil:
		actual.MountPoint = ""
	case mounted.Dev() == devNum:
		actual.Options = presentOptions(m.Options, mounted)
	default:
		actual.Device = mounted.Source
	}
	return actual, nil
}

// findMounted is what Find sees of a device the kernel has mounted at the mount point already: the same device
// number, the expected filesystem type (ext2, ext3 or ext4, whose UUID is read from the superblock). Such a
// device holds that filesystem, and blkid's probe (a process, and reads of the device, every protokube round)
// would tell nothing more. Any other case is nil, and Find probes as ever: a device not mounted there, another
// type, a filesystem whose superblock does not read as ext. Nothing is formatted on what Find saw: Render probes
// the device again, under its lock, before any mkfs.
func (m *FormatAndMount) findMounted(n *Node, dev string, devNum uint64) *FormatAndMount {
	switch *m.FSType {
	case "ext2", "ext3", "ext4":
	default:
		return nil
	}
	dir, mp, err := n.openMountPoint(m.MountPoint, false)
	if err != nil || dir == nil {
		return nil
	}
	dir.Close()
	mounted, err := mountAt(mp)
	if err != nil || mounted == nil || mounted.Dev() != devNum || mounted.FSType != *m.FSType {
		return nil
	}
	uuid, ok := extUUID(dev)
	if !ok {
		return nil
	}
	pr := probe{fsType: mounted.FSType, uuid: uuid}
	return &FormatAndMount{MountPoint: m.MountPoint, Device: m.Device, FSType: &pr.fsType, UUID: &pr.uuid,
		Options: presentOptions(m.Options, mounted), found: &pr}
}

// openMountPoint resolves the mount point inside the root, as every node path is (a symbolic link there is
// followed inside the root, never to the host's directory of the same name; one that climbs out is refused), and
// opens it (O_PATH), so that what is mounted lands on that very directory whatever happens to the path meanwhile.
// It returns the directory and its path as this process's mount table shows it; nil when it does not exist and
// mkdir is false. With mkdir, the mount point and its parents are created.
func (n *Node) openMountPoint(mountPoint string, mkdir bool) (*os.File, string, error) {
	rel, err := n.resolve(mountPoint, true, mkdir)
	if err != nil {
		return nil, "", fmt.Errorf("mount point: %w", err)
	}
	if mkdir {
		if err := os.Mkdir(filepath.Join(n.Root, rel), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, "", fmt.Errorf("creating mount point %s: %w", mountPoint, engine.FileError(err))
		}
	}
	dir, err := n.openResolved(rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !mkdir:
		return nil, "", nil
	case errors.Is(err, unix.ENOTDIR):
		return nil, "", engine.Terminal(fmt.Errorf("mount point %s is not a directory: remove what is there, or choose another mount point", mountPoint))
	case err != nil:
		return nil, "", fmt.Errorf("opening mount point %s: %w", mountPoint, engine.FileError(err))
	}
	where, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dir.Fd()))
	if err != nil {
		dir.Close()
		return nil, "", fmt.Errorf("mount point %s: %w", mountPoint, err)
	}
	return dir, where, nil
}

var fsTypeName = regexp.MustCompile(`^[a-z0-9]+$`)

// deviceName is a cloud disk name: an EBS volume id or a GCE device name.
var deviceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Validate checks the mount point, the device's form, the filesystem type's and the options' syntax.
func (m *FormatAndMount) Validate() error {
	if err := checkNodePath("MountPoint", m.MountPoint); err != nil {
		return err
	}
	switch {
	case m.Attachment != nil && m.Device != "":
		return fmt.Errorf("fields Device (%q) and Attachment (%s) are both set: set Device for a fixed device, or "+
			"Attachment for the device a volume attachment reports, not both", m.Device, m.Attachment.Key())
	case m.Attachment != nil:
		// The device is known when the task runs; it is checked then.
	case m.Device == "":
		return errors.New("field Device is required: a device path such as /dev/nvme1n1, or a cloud disk name; " +
			"or set Attachment to the task that attaches the volume")
	default:
		if err := checkDeviceName("Device", m.Device); err != nil {
			return err
		}
	}
	switch {
	case m.Volume != "" && m.Attachment == nil:
		return fmt.Errorf("field Volume (%q) names the volume Attachment attaches, but Attachment is not set", m.Volume)
	case m.Volume != "" && strings.IndexFunc(m.Volume, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("field Volume: %q is not a volume id (printable, no space or '/')", m.Volume)
	}
	if m.FSType != nil && !fsTypeName.MatchString(*m.FSType) {
		return fmt.Errorf("field FSType: %q is not a filesystem type such as ext4 or xfs", *m.FSType)
	}
	for _, o := range m.Options {
		if o == "" || strings.ContainsAny(o, ", \t\n\x00") {
			return fmt.Errorf("field Options: %q is not one mount option", o)
		}
		if o == "remount" || o == "bind" || o == "rbind" || o == "move" {
			return fmt.Errorf("field Options: %q is an operation of mount(8), not an option of the mount: drop it", o)
		}
	}
	return nil
}

// checkDeviceName vets a device's name, which field gave: an absolute clean path, or a cloud disk name.
func checkDeviceName(field, name string) error {
	switch {
	case strings.HasPrefix(name, "/"):
		return checkNodePath(field, name)
	case len(name) > 128 || !deviceName.MatchString(name):
		return fmt.Errorf("field %s: %q is neither a device path such as /dev/nvme1n1 nor a cloud disk name "+
			"such as vol-0abc123 (letters, digits, - and _)", field, name)
	}
	return nil
}

func (m *FormatAndMount) CheckChanges(actual, expected, changes *FormatAndMount) error {
	if err := expected.Validate(); err != nil {
		return err
	}
	if actual == nil {
		return nil
	}
	if err := checkDevice(expected, actual.Device, actual.found); err != nil {
		return engine.Terminal(err) // a refused device: only a person can tell what it holds
	}
	return nil
}

// checkDevice refuses what FormatAndMount must never do: format a device that holds something, mount a
// filesystem of another type, or mount over another device. mountedDevice is what is mounted at the mount
// point when it is another device.
func checkDevice(expected *FormatAndMount, mountedDevice string, pr *probe) error {
	name := expected.device()
	if mountedDevice != expected.Device {
		return fmt.Errorf("%s: %s is mounted there, not %s: unmount it, or choose another mount point",
			expected.MountPoint, mountedDevice, name)
	}
	if pr == nil {
		return nil
	}
	want := DefaultFSType
	if expected.FSType != nil {
		want = *expected.FSType
	}
	switch {
	case pr.ptType != "" || (pr.fsType == "" && pr.other != ""):
		return fmt.Errorf("device %s holds %s: kubeup formats only blank devices and mounts only filesystems: "+
			"check that it is the right device; %s", name, pr, zeroHint(name))
	case pr.fsType != "" && pr.fsType != want && mountable(pr.fsType):
		return fmt.Errorf("device %s holds %s, not %s: kubeup never reformats a device: "+
			"check that it is the right device, or set FSType to %q", name, pr, want, pr.fsType)
	case pr.fsType != "" && pr.fsType != want:
		return fmt.Errorf("device %s holds %s, not %s: kubeup never reformats a device, and does not mount %s: "+
			"check that it is the right device; %s", name, pr, want, pr.fsType, zeroHint(name))
	}
	return nil
}

// Render formats the device if, probed again under its lock, it is blank and reads as zeros, or holds what an
// interrupted format left (formatintent.go); then mounts it, or remounts it with the options that are missing.
func (m *FormatAndMount) Render(ctx context.Context, n *Node, actual, expected, changes *FormatAndMount) error {
	name, err := expected.attachedDevice()
	if err != nil {
		return err
	}
	if name == "" {
		return engine.NotReady(fmt.Errorf("%s has attached no device yet", expected.Attachment.Key()))
	}
	dev, err := n.resolveDevice(name)
	if err != nil {
		return err
	}
	if dev == "" {
		return engine.NotReady(fmt.Errorf("device %s is not there yet (not attached?)", name))
	}
	devNum, err := deviceNumber(dev)
	if err != nil {
		return err
	}
	fsType := DefaultFSType
	if expected.FSType != nil {
		fsType = *expected.FSType
	}
	l := n.deviceLock(dev)
	l.Lock()
	defer l.Unlock()
	log := engine.Logger(ctx)

	pr, err := probeDevice(ctx, dev)
	if err != nil {
		return err
	}
	if err := checkDevice(expected, expected.Device, &pr); err != nil {
		return engine.Terminal(err)
	}
	v, node, err := expected.assess(ctx, n, dev, pr, fsType)
	if err != nil {
		return err
	}
	if v == formatAgain {
		log.Warn("formatting again what an interrupted format left: the volume still carries the intent to format it, so it was never mounted since",
			"device", name, "path", dev, "found", pr.String(), "intentOf", node)
	}
	if v != keep {
		if pr, err = expected.format(ctx, n, fsType, dev, pr, v); err != nil {
			return err
		}
		log.Info("formatted device", "device", name, "path", dev, "fstype", fsType, "uuid", pr.uuid)
	}
	if pr.uuid == "" {
		return fmt.Errorf("device %s: %s filesystem without a UUID: kubeup mounts only filesystems it can tell apart by UUID", name, pr.fsType)
	}
	expected.UUID = &pr.uuid

	dir, mp, err := n.openMountPoint(expected.MountPoint, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	mounted, err := mountAt(mp)
	switch {
	case err != nil:
		return err
	case mounted != nil && mounted.Dev() != devNum:
		return engine.Terminal(checkDevice(expected, mounted.Source, nil))
	case mounted != nil:
		if len(presentOptions(expected.Options, mounted)) == len(expected.Options) {
			return nil
		}
		// dir was opened with the filesystem mounted: it is the root of that mount.
		if err := mountOnto(ctx, dir, expected.MountPoint, "-o", strings.Join(append([]string{"remount"}, expected.Options...), ",")); err != nil {
			return err
		}
		log.Info("remounted", "mountpoint", expected.MountPoint, "options", expected.Options)
		return nil
	}
	if g := n.guard; g != nil && expected.Volume != "" {
		if err := g.BeforeMount(ctx, expected.Volume); err != nil {
			return fmt.Errorf("volume %s, about to be mounted: %w", expected.Volume, err)
		}
	}
	// The device is mounted by the path of its node, the one just probed under the lock (mount(8) would look a
	// UUID= up again, and find a clone with the same UUID as well).
	args := []string{"-t", fsType}
	if len(expected.Options) > 0 {
		args = append(args, "-o", strings.Join(expected.Options, ","))
	}
	if err := mountOnto(ctx, dir, expected.MountPoint, append(args, dev)...); err != nil {
		return err
	}
	if mounted, err = mountAt(mp); err != nil {
		return err
	}
	if mounted == nil || mounted.Dev() != devNum {
		return engine.Terminal(fmt.Errorf("mounting %s (%s) at %s: the mount table shows %+v there instead: "+
			"something else mounted there at the same time? check with findmnt %s", name, dev, expected.MountPoint, mounted, mp))
	}
	log.Info("mounted", "device", name, "path", dev, "uuid", pr.uuid, "mountpoint", expected.MountPoint)
	return nil
}

// mountOnto runs mount(8) with args and the directory dir as the target. dir is handed to mount as its file
// descriptor 3 and named /proc/self/fd/3 with --no-canonicalize, so that mount neither resolves the mount point's
// path again (it would follow a symbolic link swapped in meanwhile) nor records another path: the kernel mounts
// onto the directory the descriptor holds, the one resolved inside the root.
func mountOnto(ctx context.Context, dir *os.File, mountPoint string, args ...string) error {
	const target = "/proc/self/fd/3"
	args = append(append([]string{"--no-canonicalize"}, args...), target)
	cmd := exec.CommandContext(ctx, "mount", args...)
	cmd.ExtraFiles = []*os.File{dir}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.ReplaceAll(strings.TrimSpace(string(out)), target, mountPoint)
		return fmt.Errorf("mount %s %s: %w: %s", strings.Join(args[:len(args)-1], " "), mountPoint, err, msg)
	}
	return nil
}

// mountable says whether blkid's type fsType is a filesystem FormatAndMount could mount as FSType: not swap, an
// LVM or RAID member, or an encrypted volume's header.
func mountable(fsType string) bool {
	switch fsType {
	case "ext2", "ext3", "ext4", "xfs", "btrfs":
		return true
	}
	return false
}

// mkfs creates a filesystem on a device that was just probed blank and read as zeros. -F makes mke2fs work on a
// whole device without asking; it is safe only after those checks.
func mkfs(ctx context.Context, fsType, dev string) error {
	args := []string{"-q"}
	switch {
	case strings.HasPrefix(fsType, "ext"):
		args = append(args, "-F", "-E", "nodiscard") // discarding would leave nothing to recover of a wrong format
	case fsType == "xfs":
		args = append(args, "-K")
	}
	return run(ctx, "mkfs."+fsType, append(args, dev)...)
}

// run runs a command, its output in the error when it fails.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
