package localtasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
)

// gib is the unit of SizeGB: a "GB" of a cloud volume is a binary gigabyte.
const gib = 1 << 30

// VolumeTypeSparse is the type of the volumes a Pool makes today: a sparse disk image, whose blocks are
// allocated as they are written.
const VolumeTypeSparse = "sparse"

// VolumeTypeDevice is the type of a volume that is a block device of the machine (a bare-metal disk), named by
// the Device field of its sidecar. kubeup never makes one: an operator writes its sidecar by hand.
const VolumeTypeDevice = "device"

// VolumeInfo is what a Pool records of a volume, in its sidecar file.
type VolumeInfo struct {
	Name       string            `json:"name"`
	Zone       string            `json:"zone"`
	SizeGB     int32             `json:"sizeGB"`
	VolumeType string            `json:"volumeType"`
	Tags       map[string]string `json:"tags,omitempty"`
	// Device is, for a volume of type "device", the absolute path of the block device the volume is
	// ("/dev/disk/by-id/ata-..."): such a volume has no image, and kubeup never creates, grows, wipes or deletes
	// the device; deleting the volume removes only its sidecar.
	Device string `json:"device,omitempty"`
}

// Pool is a directory of volumes. Volume NAME is the disk image Dir/NAME.img (sparse, created at its full size,
// mode 0600) and the sidecar Dir/NAME.json, which holds its VolumeInfo. The sidecar is the record of the volume:
// it is written last on create (atomically: temporary file, fsync, rename) and removed last on delete, so a crash
// leaves either nothing, an image a new Create adopts, or a volume Delete finishes removing.
//
// Writers are serialised within the process, and across processes by a flock on the pool directory (see
// dirLock: a writer that waits says who holds the lock). Readers take no lock: every file is replaced atomically. Fields of the sidecar that this version does not know
// (written by a later kubeup) are kept when it is rewritten.
type Pool struct {
	dir string
	lk  *dirLock
}

// NewPool returns the pool in dir. The directory is created with the first volume.
func NewPool(dir string) (*Pool, error) {
	if dir == "" {
		return nil, errors.New("the local provider needs a pool directory for its volumes")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pool directory %s: %w", dir, err)
	}
	return &Pool{dir: abs, lk: newDirLock(abs, "volume pool", isPoolTemp)}, nil
}

// Dir returns the pool's directory, absolute.
func (p *Pool) Dir() string { return p.dir }

// ImagePath returns the path of a volume's disk image.
func (p *Pool) ImagePath(name string) (string, error) {
	if err := validateVolumeName(name); err != nil {
		return "", err
	}
	return filepath.Join(p.dir, name+".img"), nil
}

func (p *Pool) sidecarPath(name string) string { return filepath.Join(p.dir, name+".json") }

// validateVolumeName accepts names that are safe file names on every filesystem: lowercase letters, digits,
// '.', '-' and '_', starting with a letter or digit, no "..", at most 200 bytes.
func validateVolumeName(name string) error {
	switch {
	case name == "":
		return errors.New("volume name is empty")
	case len(name) > 200:
		return fmt.Errorf("volume name %q is longer than 200 bytes", name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("volume name %q contains \"..\"", name)
	case !isLowerAlnum(rune(name[0])):
		return fmt.Errorf("volume name %q must start with a lowercase letter or a digit", name)
	}
	for _, r := range name {
		if !isLowerAlnum(r) && r != '.' && r != '-' && r != '_' {
			return fmt.Errorf("volume name %q has %q: use lowercase letters, digits, '.', '-' and '_'", name, r)
		}
	}
	return nil
}

func isLowerAlnum(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }

// validate checks a VolumeInfo before it is written.
func (v *VolumeInfo) validate() error {
	if err := validateVolumeName(v.Name); err != nil {
		return err
	}
	switch {
	case v.Zone == "":
		return fmt.Errorf("volume %s: zone is empty", v.Name)
	case v.SizeGB <= 0:
		return fmt.Errorf("volume %s: size %d GB is not positive", v.Name, v.SizeGB)
	case v.Device != "":
		return fmt.Errorf("volume %s: kubeup never makes a device volume (%s): write its sidecar %s.json by hand", v.Name, v.Device, v.Name)
	case v.VolumeType != VolumeTypeSparse:
		return fmt.Errorf("volume %s: volume type %q is not one the local provider makes: use %q",
			v.Name, v.VolumeType, VolumeTypeSparse)
	}
	return validateTags(v.Name, v.Tags)
}

func validateTags(name string, tags map[string]string) error {
	if _, ok := tags[""]; ok {
		return fmt.Errorf("volume %s: a tag has an empty key", name)
	}
	return nil
}

// sidecar is a volume's sidecar file as read: the fields kubeup knows, and every field as written, so that a
// rewrite keeps the fields it does not know.
type sidecar struct {
	info VolumeInfo
	raw  map[string]json.RawMessage
}

// readSidecar reads a volume's sidecar; nil, nil when it does not exist.
func (p *Pool) readSidecar(name string) (*sidecar, error) {
	path := p.sidecarPath(name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, engine.FileError(err))
	}
	var sc sidecar
	err = json.Unmarshal(b, &sc.info)
	if err == nil {
		err = json.Unmarshal(b, &sc.raw)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a volume's sidecar file: fix it, or delete it and %s.img to delete the volume: %w",
			path, name, err)
	}
	if sc.info.Name != name {
		return nil, fmt.Errorf("%s names volume %q, not %q: fix the name field or the file name", path, sc.info.Name, name)
	}
	if err := checkDevice(path, &sc.info); err != nil {
		return nil, err
	}
	if len(sc.info.Tags) == 0 {
		sc.info.Tags = nil
	}
	return &sc, nil
}

// checkDevice checks the device fields of a sidecar written by hand: a device volume names an absolute path and
// has type "device", and only a device volume has that type.
func checkDevice(path string, v *VolumeInfo) error {
	switch {
	case v.Device != "" && !filepath.IsAbs(v.Device):
		return fmt.Errorf("%s: device %q is not an absolute path: name the block device by its absolute path (under /dev/disk/by-id)", path, v.Device)
	case v.Device != "" && v.VolumeType != VolumeTypeDevice:
		return fmt.Errorf("%s names device %s but its volumeType is %q: set volumeType to %q", path, v.Device, v.VolumeType, VolumeTypeDevice)
	case v.Device == "" && v.VolumeType == VolumeTypeDevice:
		return fmt.Errorf("%s has volumeType %q but no device: name the block device in its device field (/dev/disk/by-id/...)", path, VolumeTypeDevice)
	}
	return nil
}

// write writes the sidecar atomically, with the known fields replaced by info's.
func (p *Pool) writeSidecar(sc *sidecar) error {
	if sc.raw == nil {
		sc.raw = map[string]json.RawMessage{}
	}
	known, err := json.Marshal(sc.info)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(known, &fields); err != nil {
		return err
	}
	delete(sc.raw, "tags") // omitted when empty
	maps.Copy(sc.raw, fields)
	b, err := json.MarshalIndent(sc.raw, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(p.sidecarPath(sc.info.Name), append(b, '\n'), 0o644)
}

// List returns the volumes whose tags match filter, sorted by name: every key of filter must be a tag of the
// volume, with the same value, or with any value where filter's value is "". A nil filter matches every volume.
// List reads only the sidecars; files that are not a volume's are ignored.
func (p *Pool) List(ctx context.Context, filter map[string]string) ([]VolumeInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing volumes in %s: %w", p.dir, engine.FileError(err))
	}
	var out []VolumeInfo
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() || validateVolumeName(name) != nil {
			continue // a temporary file, or not a volume's
		}
		sc, err := p.readSidecar(name)
		if err != nil {
			return nil, err
		}
		if sc != nil && matches(sc.info.Tags, filter) { // nil: deleted since ReadDir
			out = append(out, sc.info)
		}
	}
	slices.SortFunc(out, func(a, b VolumeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func matches(tags, filter map[string]string) bool {
	for k, want := range filter {
		if v, ok := tags[k]; !ok || want != "" && v != want {
			return false
		}
	}
	return true
}

// Get returns a volume; nil, nil when there is none. A sidecar without its image is an error: the volume's data
// is gone, and kubeup will not pretend otherwise. A device volume has no image: whether its device is there is
// checked when it is attached.
func (p *Pool) Get(ctx context.Context, name string) (*VolumeInfo, error) {
	if err := validateVolumeName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sc, err := p.readSidecar(name)
	if err != nil || sc == nil {
		return nil, err
	}
	if sc.info.Device != "" {
		return &sc.info, nil
	}
	img, _ := p.ImagePath(name)
	if _, err := os.Stat(img); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("volume %s has a sidecar but its image %s is missing: restore the image, or delete %s to create the volume afresh",
				name, img, p.sidecarPath(name))
		}
		return nil, fmt.Errorf("volume %s: %w", name, engine.FileError(err))
	}
	return &sc.info, nil
}

// lock serialises the pool's writers, in this process and across processes.
func (p *Pool) lock(ctx context.Context) (unlock func(), err error) { return p.lk.lock(ctx) }

// isPoolTemp reports whether name is a temporary file of a sidecar: ".NAME.json.tmp-DIGITS".
func isPoolTemp(name string) bool {
	i := strings.LastIndex(name, ".json.tmp-")
	return i > 1 && validateVolumeName(name[1:i]) == nil && atomicfile.IsTempOf(name, name[1:i]+".json")
}

// Create makes a new volume: a sparse image of SizeGB, no data written, then its sidecar. An existing volume
// is an error that matches fs.ErrExist. An image without a sidecar is what a crash during Create leaves: it is
// adopted when no block of it was ever written, and refused otherwise (it may hold someone's data).
func (p *Pool) Create(ctx context.Context, v VolumeInfo) error {
	if err := v.validate(); err != nil {
		return err
	}
	v.Tags = maps.Clone(v.Tags)
	if len(v.Tags) == 0 {
		v.Tags = nil
	}
	unlock, err := p.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if sc, err := p.readSidecar(v.Name); err != nil {
		return err
	} else if sc != nil {
		return fmt.Errorf("creating volume %s: %w", v.Name, fs.ErrExist)
	}
	if err := p.removeStaleClaim(ctx, v.Name); err != nil {
		return fmt.Errorf("creating volume %s: %w", v.Name, err)
	}
	img, _ := p.ImagePath(v.Name)
	f, err := os.OpenFile(img, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		f, err = adoptImage(img)
	}
	if err != nil {
		return fmt.Errorf("creating volume %s: %w", v.Name, engine.FileError(err))
	}
	err = f.Truncate(int64(v.SizeGB) * gib)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("creating image of volume %s (%d GB): %w", v.Name, v.SizeGB, engine.FileError(err))
	}
	return p.writeSidecar(&sidecar{info: v})
}

// adoptImage opens an image left without a sidecar, if it holds no data.
func adoptImage(img string) (*os.File, error) {
	fi, err := os.Stat(img)
	if err != nil {
		return nil, err
	}
	if used, ok := allocated(fi); !fi.Mode().IsRegular() || !ok || used > 0 {
		return nil, fmt.Errorf("%s exists without a sidecar and may hold data: move it away, or delete it, to create the volume", img)
	}
	return os.OpenFile(img, os.O_WRONLY, 0)
}

// update changes a volume's sidecar under the pool's lock.
func (p *Pool) update(ctx context.Context, name string, change func(*VolumeInfo) error) error {
	return p.updateSidecar(ctx, name, func(sc *sidecar) error { return change(&sc.info) })
}

// updateSidecar changes a volume's sidecar, every field of it, under the pool's lock.
func (p *Pool) updateSidecar(ctx context.Context, name string, change func(*sidecar) error) error {
	if err := validateVolumeName(name); err != nil {
		return err
	}
	unlock, err := p.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	sc, err := p.readSidecar(name)
	if err != nil {
		return err
	}
	if sc == nil {
		return fmt.Errorf("volume %s: %w", name, fs.ErrNotExist)
	}
	if err := change(sc); err != nil {
		return err
	}
	return p.writeSidecar(sc)
}

// Grow makes a volume sizeGB large. A volume never shrinks: a smaller size is an error. The image grows first,
// then the sidecar records it; the image is never made smaller than it is.
func (p *Pool) Grow(ctx context.Context, name string, sizeGB int32) error {
	return p.update(ctx, name, func(v *VolumeInfo) error { return p.growImage(v, sizeGB) })
}

// growImage grows v's image to sizeGB and records it in v, under the pool's lock.
func (p *Pool) growImage(v *VolumeInfo, sizeGB int32) error {
	if v.Device != "" {
		return engine.Terminal(fmt.Errorf("volume %s is the device %s: kubeup never grows a device: set sizeGB in %s to the size the cluster asks (%d) if the device holds that much, or ask for %d GB",
			v.Name, v.Device, p.sidecarPath(v.Name), sizeGB, v.SizeGB))
	}
	if sizeGB < v.SizeGB {
		return fmt.Errorf("volume %s cannot shrink from %d GB to %d GB", v.Name, v.SizeGB, sizeGB)
	}
	img, _ := p.ImagePath(v.Name)
	fi, err := os.Stat(img)
	if err == nil && fi.Size() < int64(sizeGB)*gib {
		err = os.Truncate(img, int64(sizeGB)*gib)
	}
	if err != nil {
		return fmt.Errorf("growing volume %s to %d GB: %w", v.Name, sizeGB, engine.FileError(err))
	}
	v.SizeGB = sizeGB
	return nil
}

// SetTags replaces a volume's tags with tags, as a whole: a tag that tags does not hold is removed.
func (p *Pool) SetTags(ctx context.Context, name string, tags map[string]string) error {
	if err := validateTags(name, tags); err != nil {
		return err
	}
	return p.update(ctx, name, func(v *VolumeInfo) error {
		v.Tags = maps.Clone(tags)
		if len(v.Tags) == 0 {
			v.Tags = nil
		}
		return nil
	})
}

// Delete removes a volume: its image, then its claim, then its sidecar (with the format intent it records). An
// absent volume is not an error. A device volume loses only its claim and sidecar: the device and its data are
// left as they are. Delete does not look at who holds the volume: Cloud.DeleteOwned does, and refuses a volume a
// node still holds.
func (p *Pool) Delete(ctx context.Context, name string) error {
	if _, err := p.ImagePath(name); err != nil {
		return err
	}
	if _, err := os.Stat(p.dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := p.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return p.deleteLocked(ctx, name)
}

// deleteLocked is Delete, under the pool's lock.
func (p *Pool) deleteLocked(ctx context.Context, name string) error {
	img, err := p.ImagePath(name)
	if err != nil {
		return err
	}
	paths := []string{img, p.claimPath(name), p.sidecarPath(name)}
	sc, err := p.readSidecar(name)
	if err != nil {
		return fmt.Errorf("deleting volume %s: %w", name, err)
	}
	if sc != nil && sc.info.Device != "" {
		paths = paths[1:]
		engine.Logger(ctx).Info("deleting a device volume: removing its claim and sidecar only, the device and its data are left as they are",
			"volume", name, "device", sc.info.Device, "sidecar", p.sidecarPath(name))
	}
	for _, path := range paths {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("deleting volume %s: %w", name, engine.FileError(err))
		}
	}
	if err := atomicfile.SyncDir(p.dir); err != nil {
		return fmt.Errorf("deleting volume %s: %w", name, engine.FileError(err))
	}
	return nil
}

// removeStaleClaim removes the claim a volume of the same name left (deleted by hand, or by a kubeup that left
// claims behind), under the pool's lock, before volume name is created: a claim is made only of a volume that
// exists, so one without a sidecar is of a volume that is gone, and the new volume is nobody's. The previous
// holder, if it still runs, finds its claim gone at its next renewal.
func (p *Pool) removeStaleClaim(ctx context.Context, name string) error {
	path := p.claimPath(name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return engine.FileError(err)
	}
	var c claimRecord
	_ = json.Unmarshal(b, &c) // for the log alone: whatever it holds, it is not a claim of the new volume
	engine.Logger(ctx).Warn("removing the claim a deleted volume of the same name left: the new volume is nobody's",
		"volume", name, "claim", path, "node", c.NodeID, "device", c.Device)
	return p.removeClaim(name)
}
