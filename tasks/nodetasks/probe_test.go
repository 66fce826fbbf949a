package nodetasks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
)

// fakeBlkid puts a blkid first on PATH that prints stdout and stderr and exits with code, whatever it is asked.
func fakeBlkid(t *testing.T, stdout, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"out": stdout, "err": stderr} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf("#!/bin/sh\ncat %s/out\ncat %s/err >&2\nexit %d\n", dir, dir, code)
	if err := os.WriteFile(filepath.Join(dir, "blkid"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// fakeDevice is a file standing in for a block device: size bytes of zeros, with data written at the offsets
// given.
func fakeDevice(t *testing.T, size int64, data map[int64]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for off, s := range data {
		if _, err := f.WriteAt([]byte(s), off); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// A device is blank only when blkid ran, read it and found nothing, and its first MiB reads: every other
// outcome is a terminal error that names the device, or "not blank".
func TestProbeDevice(t *testing.T) {
	const mib = 1 << 20
	zeros := func(t *testing.T) string { return fakeDevice(t, 4*mib, nil) }
	tests := []struct {
		name     string
		stdout   string
		stderr   string
		code     int
		device   func(t *testing.T) string
		want     probe
		wantErr  string // also: terminal, and naming the device
		notBlank bool   // no error, but not blank either
	}{
		{name: "nothing found", code: 2, device: zeros, want: probe{blkidRC: 2}},
		{name: "ext4", code: 0, device: zeros, stdout: "DEVNAME=X\nUUID=u-1\nTYPE=ext4\nUSAGE=filesystem\n",
			want: probe{fsType: "ext4", uuid: "u-1"}},
		{name: "permission denied", code: 2, device: zeros, stderr: "blkid: error: /dev/loop3: Permission denied\n",
			wantErr: "blkid could not read it: blkid: error: /dev/loop3: Permission denied"},
		{name: "no such device or address", code: 2, device: zeros, stderr: "blkid: error: /dev/loop3: No such device or address\n",
			wantErr: "No such device or address"},
		{name: "a warning on stderr with a result", code: 0, device: zeros, stdout: "TYPE=ext4\n",
			stderr: "blkid: warning: something odd\n", wantErr: "blkid: warning: something odd"},
		{name: "exit 2 with output", code: 2, device: zeros, stdout: "TYPE=ext4\n", wantErr: "exit status 2 with output"},
		{name: "usage error", code: 4, device: zeros, wantErr: "exit status 4"},
		{name: "exit 0 naming nothing", code: 0, device: zeros, stdout: "DEVNAME=/dev/loop3\n", notBlank: true},
		{name: "ambivalent", code: 8, device: zeros, notBlank: true},
		{name: "empty device", code: 2, device: func(t *testing.T) string { return fakeDevice(t, 0, nil) },
			wantErr: "reads as empty"},
		{name: "unreadable first MiB", code: 2, device: func(t *testing.T) string { return t.TempDir() },
			wantErr: "reading the first MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeBlkid(t, tt.stdout, tt.stderr, tt.code)
			dev := tt.device(t)
			got, err := probeDevice(context.Background(), dev)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), dev) {
					t.Fatalf("probeDevice = %+v, %v; want an error naming %s and containing %q", got, err, dev, tt.wantErr)
				}
				if c := engine.ClassOf(err); c != engine.ClassTerminal {
					t.Errorf("error class %v, want terminal", c)
				}
			case err != nil:
				t.Fatalf("probeDevice: %v", err)
			case tt.notBlank:
				if got.blank() {
					t.Errorf("probeDevice = %+v: blank, want not blank", got)
				}
			default:
				if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(probe{})); diff != "" {
					t.Errorf("probeDevice (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestProbeDeviceWithoutBlkid(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dev := fakeDevice(t, 1<<20, nil)
	if p, err := probeDevice(context.Background(), dev); err == nil {
		t.Fatalf("probeDevice without blkid = %+v, want an error", p)
	}
}

// The zero check reads a device whole up to fullScanMax, a larger one in its first 2 MiB, its last MiB and in
// samples (zeroCheckSpans): anything but zeros there, or a read that fails, refuses.
func TestCheckZeroed(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name    string
		device  func(t *testing.T) string
		wantErr string
	}{
		{name: "new volume", device: func(t *testing.T) string { return fakeDevice(t, 8*mib, nil) }},
		{name: "a new large volume", device: func(t *testing.T) string { return fakeDevice(t, 4<<30, nil) }},
		{name: "smaller than a MiB", device: func(t *testing.T) string { return fakeDevice(t, 4096, nil) }},
		{name: "data in the middle", device: func(t *testing.T) string {
			return fakeDevice(t, 8*mib, map[int64]string{4*mib + 5: "x"})
		}, wantErr: "byte 4194309 is not zero"},
		{name: "a partition's superblock at 1 MiB", device: func(t *testing.T) string {
			return fakeDevice(t, 8*mib, map[int64]string{mib + 1024 + 56: "\x53\xef"})
		}, wantErr: "byte 1049656 is not zero"},
		{name: "a large device: ext's backup superblock at 128 MiB", device: func(t *testing.T) string {
			return fakeDevice(t, 4<<30, map[int64]string{128*mib + 56: "\x53\xef"})
		}, wantErr: "byte 134217784 is not zero"},
		{name: "a large device: its last MiB", device: func(t *testing.T) string {
			return fakeDevice(t, 4<<30, map[int64]string{4<<30 - 1: "x"})
		}, wantErr: "is not zero"},
		{name: "a large device: zeros where it is sampled", device: func(t *testing.T) string {
			return fakeDevice(t, 4<<30, map[int64]string{8*mib - 1: "x", 8*mib + sampleSize: "y"})
		}},
		{name: "a superblock", device: func(t *testing.T) string { return fakeDevice(t, 8*mib, map[int64]string{1024 + 56: "\x53\xef"}) },
			wantErr: "byte 1080 is not zero"},
		{name: "metadata at the end", device: func(t *testing.T) string { return fakeDevice(t, 8*mib, map[int64]string{8*mib - 10: "md"}) },
			wantErr: "is not zero"},
		{name: "empty", device: func(t *testing.T) string { return fakeDevice(t, 0, nil) }, wantErr: "reads as empty"},
		{name: "unreadable", device: func(t *testing.T) string { return t.TempDir() }, wantErr: "reading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := tt.device(t)
			err := checkZeroed(context.Background(), dev)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("checkZeroed: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), dev)):
				t.Errorf("checkZeroed = %v, want an error naming %s and containing %q", err, dev, tt.wantErr)
			case tt.wantErr != "" && engine.ClassOf(err) != engine.ClassTerminal:
				t.Errorf("error class %v, want terminal", engine.ClassOf(err))
			}
		})
	}
}

// TestZeroCheckSpans: a device up to fullScanMax is read whole, in MiB pieces after the first; a larger one in
// its second MiB, sampleSize at every sampleEvery, and its last MiB, in order, inside the device.
func TestZeroCheckSpans(t *testing.T) {
	const mib = 1 << 20
	if got, want := zeroCheckSpans(3*mib+5), []span{{mib, mib}, {2 * mib, mib}, {3 * mib, 5}}; !slices.Equal(got, want) {
		t.Errorf("3 MiB + 5: %v, want %v", got, want)
	}
	if got := zeroCheckSpans(mib); len(got) != 0 {
		t.Errorf("1 MiB: %v, want nothing after the first MiB", got)
	}
	size := int64(20 << 30)
	got := zeroCheckSpans(size)
	if got[0] != (span{mib, mib}) || got[len(got)-1] != (span{size - mib, mib}) {
		t.Errorf("20 GiB: first %v, last %v", got[0], got[len(got)-1])
	}
	var read int64
	at := map[int64]bool{}
	for i, s := range got {
		read += s.n
		at[s.off] = true
		if s.off < mib || s.off+s.n > size || i > 0 && s.off < got[i-1].off+got[i-1].n {
			t.Errorf("span %d %v: outside the device or out of order", i, s)
		}
	}
	for _, off := range []int64{8 * mib, 32 * mib, 128 * mib, 5 << 30} {
		if !at[off] {
			t.Errorf("20 GiB: nothing read at %d", off)
		}
	}
	if read > size/100 {
		t.Errorf("20 GiB: %d bytes read, more than 1%%", read)
	}

	// A huge device: at most maxSamples samples (and the fixed places), ext's backup superblocks still read.
	size = 1 << 40
	got = zeroCheckSpans(size)
	if len(got) > maxSamples+8 {
		t.Errorf("1 TiB: %d spans", len(got))
	}
	at = map[int64]bool{}
	for i, s := range got {
		at[s.off] = true
		if s.off < mib || s.off+s.n > size || i > 0 && s.off < got[i-1].off+got[i-1].n {
			t.Errorf("1 TiB: span %d %v: outside the device or out of order", i, s)
		}
	}
	for _, off := range []int64{mib, 8 * mib, 32 * mib, 128 * mib, size - mib} {
		if !at[off] {
			t.Errorf("1 TiB: nothing read at %d", off)
		}
	}
}

// The zero check stops when its context ends.
func TestCheckZeroedCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dev := fakeDevice(t, 2<<30, nil)
	if err := checkZeroed(ctx, dev); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("checkZeroed with its context ended: %v", err)
	}
}
