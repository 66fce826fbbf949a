package nodetasks

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// How FormatAndMount decides that a device is blank, the only kind it formats. Two independent checks must agree:
//
//  1. probeDevice: blkid's low-level probe ran, read the device and found nothing (exit status 2, no output,
//     nothing on stderr), the first MiB of the device reads, and the kernel lists no partitions. blkid exits 2
//     both for "nothing found" and for "could not open the device" (EACCES, ENXIO, EIO), telling them apart only
//     on stderr: any stderr output, any other exit status, any unreadable first MiB is an error, never "blank".
//  2. firstDataByte: the device reads, and reads as zeros: all of it up to fullScanMax (1 GiB), a larger one in
//     its first 2 MiB, its last MiB, ext's first backup superblocks and 64 KiB at every 8 MiB (farther apart
//     beyond 32 GiB: at most 4096 samples; zeroCheckSpans). It needs no blkid, so a blkid
//     that lies or cannot see (a wrapper, a seccomp or LSM rule that denies it alone, a signature it does not
//     know) cannot get a device with data formatted; nor can a header wiped by hand (dd over the first sectors
//     leaves a partition's filesystem at 1 MiB, ext's backup superblocks at 8, 32 and 128 MiB, XFS's
//     allocation group headers, and the data itself).
//
// Both run again right before mkfs, under the device lock, after the format intent is recorded (formatintent.go):
// the device must still hold what was assessed. And mkfs discards nothing (ext: -E nodiscard, xfs: -K), so that
// a wrong format, should one ever happen, leaves the old blocks to recover.
//
// The second check never refuses a genuinely new volume: a new EBS volume (not from a snapshot), a new GCE
// persistent disk and the local provider's sparse disk images all read as zeros until written. A device that was
// used and then "wiped" with wipefs alone, or whose first sectors were zeroed, is refused: it is not known to be
// free, and the error says how to zero it whole if its data is not needed.

const mib = 1 << 20

// probe is what a device holds, by blkid's low-level probe.
type probe struct {
	fsType  string // TYPE: "ext4", "xfs", "LVM2_member", ...
	uuid    string
	ptType  string // PTTYPE: "gpt", "dos"
	other   string // a signature blkid found but could not name, or "partitions" the kernel sees
	blkidRC int
}

func (p probe) blank() bool { return p.fsType == "" && p.ptType == "" && p.other == "" }

// String says what the device holds, for error messages.
func (p probe) String() string {
	switch {
	case p.ptType != "":
		return "a partition table (" + p.ptType + ")"
	case p.fsType == "swap":
		return "swap space (blkid TYPE=swap)"
	case p.fsType == "LVM2_member":
		return "an LVM physical volume (blkid TYPE=LVM2_member)"
	case p.fsType == "crypto_LUKS":
		return "a LUKS encrypted volume's header (blkid TYPE=crypto_LUKS)"
	case p.fsType == "linux_raid_member":
		return "a RAID member's superblock (blkid TYPE=linux_raid_member)"
	case p.fsType != "" && !mountable(p.fsType):
		return "a " + p.fsType + " signature (blkid TYPE)"
	case p.fsType != "" && strings.ContainsRune("aeiox", rune(p.fsType[0])):
		return "an " + p.fsType + " filesystem" // an ext4, an xfs
	case p.fsType != "":
		return "a " + p.fsType + " filesystem"
	case p.other != "":
		return p.other
	}
	return "nothing"
}

// unreadable is the terminal error of a device FormatAndMount could not read: nothing was changed.
func unreadable(dev, what string, err error) error {
	return engine.Terminal(fmt.Errorf("device %s: %s: %w: kubeup formats only a device it has read and found blank, "+
		"so it changed nothing: make the device readable (permissions, its health: see dmesg), then run again", dev, what, err))
}

// probeDevice asks blkid what dev holds, bypassing its cache, then reads the device's first MiB itself.
// Partitions the kernel knows of count too, even where blkid sees no table. See the top of this file for when a
// device counts as blank.
func probeDevice(ctx context.Context, dev string) (probe, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "blkid", "-p", "-o", "export", dev)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return probe{}, ctx.Err()
	}
	p, err := classifyBlkid(runErr, stdout.Bytes(), stderr.Bytes())
	if err != nil {
		return probe{}, unreadable(dev, "probing it with blkid -p", err)
	}
	if _, _, err := readHead(dev); err != nil {
		return probe{}, err
	}
	if p.ptType == "" && p.other == "" && hasPartitions(dev) {
		p.other = "partitions"
	}
	return p, nil
}

// classifyBlkid reads the outcome of `blkid -p -o export DEV`: exit status 0 with KEY=value lines is a
// signature, 2 with no output at all is "nothing found", 8 is several signatures. Anything on stderr, and any
// other outcome, is an error: blkid may not have read the device.
func classifyBlkid(runErr error, stdout, stderr []byte) (probe, error) {
	var exitErr *exec.ExitError
	code := 0
	switch {
	case errors.As(runErr, &exitErr):
		code = exitErr.ExitCode()
	case runErr != nil:
		return probe{}, runErr // not found, not executable
	}
	if msg := strings.TrimSpace(string(stderr)); msg != "" {
		return probe{}, fmt.Errorf("blkid could not read it: %s", msg)
	}
	switch code {
	case 0:
		p := parseBlkid(stdout)
		if p.blank() {
			line, _, _ := strings.Cut(strings.TrimSpace(string(stdout)), "\n")
			p.other = fmt.Sprintf("a signature blkid did not name (%q)", line)
		}
		return p, nil
	case 2:
		if len(bytes.TrimSpace(stdout)) > 0 {
			return probe{}, fmt.Errorf("blkid: %w with output %q", runErr, stdout)
		}
		return probe{blkidRC: 2}, nil
	case 8:
		return probe{other: "several signatures (blkid: ambivalent result)"}, nil
	}
	return probe{}, fmt.Errorf("blkid: %w", runErr)
}

// parseBlkid reads `blkid -p -o export` output: KEY=value lines.
func parseBlkid(out []byte) probe {
	var p probe
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "TYPE":
			p.fsType = v
		case "UUID":
			p.uuid = v
		case "PTTYPE":
			p.ptType = v
		case "USAGE":
			if p.fsType == "" {
				p.other = "a signature of usage " + v
			}
		}
	}
	if p.fsType != "" {
		p.other = ""
	}
	return p
}

// hasPartitions reports whether the kernel lists partitions of dev in sysfs.
func hasPartitions(dev string) bool {
	if real, err := filepath.EvalSymlinks(dev); err == nil { // /dev/disk/by-id/... names the kernel's device
		dev = real
	}
	name := filepath.Base(dev)
	entries, err := os.ReadDir(filepath.Join("/sys/class/block", name))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), name) {
			if _, err := os.Stat(filepath.Join("/sys/class/block", name, e.Name(), "partition")); err == nil {
				return true
			}
		}
	}
	return false
}

// readHead reads the first MiB of dev (all of it when it is smaller) and its size. A device that cannot be
// opened or read, or that reads as empty, is an unreadable error.
func readHead(dev string) (head []byte, size int64, err error) {
	f, err := os.Open(dev)
	if err != nil {
		return nil, 0, unreadable(dev, "opening it", err)
	}
	defer f.Close()
	return readHeadOf(f, dev)
}

func readHeadOf(f *os.File, dev string) ([]byte, int64, error) {
	buf := make([]byte, mib)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, unreadable(dev, "reading the first MiB", err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, 0, unreadable(dev, "reading its size", err)
	}
	if size == 0 {
		return nil, 0, unreadable(dev, "reading it", errors.New("it reads as empty (size 0): is it attached, is a loop device bound to a file?"))
	}
	if want := min(size, mib); int64(n) < want {
		return nil, 0, unreadable(dev, "reading the first MiB", fmt.Errorf("read %d bytes of %d", n, want))
	}
	return buf[:n], size, nil
}

// checkZeroed refuses dev unless it reads as zeros where firstDataByte looks.
func checkZeroed(ctx context.Context, dev string) error {
	off, err := firstDataByte(ctx, dev)
	if err != nil || off < 0 {
		return err
	}
	return notZeroed(dev, off)
}

// notZeroed is the terminal error of a device without a signature whose byte off is not zero.
func notZeroed(dev string, off int64) error {
	return engine.Terminal(fmt.Errorf("device %s: blkid found no signature, but byte %d is not zero: "+
		"kubeup formats only a device that reads as zeros, as a new volume does, and this one "+
		"may hold data blkid cannot name (a filesystem whose first sectors were wiped, a partition whose table was), so nothing was changed: check that it is the right device; %s",
		dev, off, zeroHint(dev)))
}

// A device up to fullScanMax is read whole before it is formatted; a larger one where metadata lives and in
// samples (zeroCheckSpans): at a first format of a new cloud volume, a whole read of hundreds of GiB would take
// minutes. The samples are sampleEvery apart, farther on a device so large that there would be more than
// maxSamples (a multiple of sampleEvery: 1 TiB is read at every 256 MiB), so that the check stays within
// seconds on a slow disk (a few thousand reads).
const (
	fullScanMax = 1 << 30
	sampleEvery = 8 * mib
	sampleSize  = 64 << 10
	maxSamples  = 4096
)

// span is a range of a device: n bytes at off.
type span struct{ off, n int64 }

// zeroCheckSpans are the ranges of a device of size bytes that firstDataByte reads after its first MiB, in
// order: everything up to fullScanMax; beyond, the second MiB (a partition's filesystem starts at 1 MiB), ext's
// backup superblocks of its first block groups (at 8, 32 and 128 MiB for 1, 2 and 4 KiB blocks), sampleSize
// bytes at every multiple of the sample step (sampleEvery, or more on a huge device) and the last MiB (RAID,
// LVM and GPT metadata at the end).
func zeroCheckSpans(size int64) []span {
	var out []span
	add := func(off, n int64) {
		if off < mib {
			n, off = n-(mib-off), mib
		}
		n = min(n, size-off)
		if n > 0 {
			out = append(out, span{off, n})
		}
	}
	if size <= fullScanMax {
		for off := int64(mib); off < size; off += mib {
			add(off, mib)
		}
		return out
	}
	add(mib, mib)
	step := int64(sampleEvery)
	for size/step > maxSamples {
		step *= 2
	}
	for _, off := range []int64{8 * mib, 32 * mib, 128 * mib} {
		if off%step != 0 { // else a sample below reads it
			add(off, sampleSize)
		}
	}
	for off := step; off < size-mib; off += step {
		add(off, sampleSize)
	}
	add(size-mib, mib)
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.off, b.off) })
	return out
}

// firstDataByte returns the offset of the first byte that is not zero in dev's first MiB or in its
// zeroCheckSpans; -1 when they all read as zeros. A device that cannot be read is an unreadable error; ctx
// ending stops the reads.
func firstDataByte(ctx context.Context, dev string) (int64, error) {
	f, err := os.Open(dev)
	if err != nil {
		return 0, unreadable(dev, "opening it", err)
	}
	defer f.Close()
	head, size, err := readHeadOf(f, dev)
	if err != nil {
		return 0, err
	}
	if i := firstNonZero(head); i >= 0 {
		return int64(i), nil
	}
	buf := head[:cap(head)]
	for _, s := range zeroCheckSpans(size) {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("device %s: reading it for zeros: %w", dev, err)
		}
		b := buf[:s.n]
		if n, err := f.ReadAt(b, s.off); n < len(b) {
			return 0, unreadable(dev, fmt.Sprintf("reading %d bytes at byte %d", s.n, s.off), fmt.Errorf("read %d: %w", n, err))
		}
		if i := firstNonZero(b); i >= 0 {
			return s.off + int64(i), nil
		}
	}
	return -1, nil
}

// zeros is a MiB of zeros, for firstNonZero.
var zeros = make([]byte, mib)

func firstNonZero(b []byte) int {
	if len(b) <= len(zeros) && bytes.Equal(b, zeros[:len(b)]) {
		return -1
	}
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

// zeroHint says how to make a device formattable, for an error message.
func zeroHint(dev string) string {
	return fmt.Sprintf("only if its data is not needed, zero it (blkdiscard --zeroout %s, or dd if=/dev/zero of=%s bs=1M)", dev, dev)
}
