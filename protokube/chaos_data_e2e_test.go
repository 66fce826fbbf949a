//go:build e2e

package protokube_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"kubeup.dev/kubeup/internal/e2e"
)

// markerFile is the file the chaos tests write at the root of each volume the first time they see it mounted:
// its content must survive every later move, restart and kill (a volume formatted again loses it).
const markerFile = "kubeup-chaos-marker"

// volumeData is what the chaos tests know each volume of a pool holds: the marker they wrote there and the UUID
// of its filesystem. A volume that lost either was formatted while it held data.
type volumeData struct {
	pool string

	mu     sync.Mutex
	marker map[string]string // by volume
	uuid   map[string]string
}

func newVolumeData(t *testing.T, pool string) *volumeData {
	t.Helper()
	e2e.RequireTools(t, "blkid", "debugfs")
	return &volumeData{pool: pool, marker: map[string]string{}, uuid: map[string]string{}}
}

func (d *volumeData) image(vol string) string { return filepath.Join(d.pool, vol+".img") }

// mounted is told that vol is mounted at mountPoint: the first time, the test writes its marker there (synced)
// and records the filesystem's UUID; later, both must be what they were.
func (d *volumeData) mounted(t *testing.T, vol, mountPoint string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	want, known := d.marker[vol]
	if !known {
		b := make([]byte, 16)
		rand.Read(b)
		want = hex.EncodeToString(b)
		f, err := os.OpenFile(filepath.Join(mountPoint, markerFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatalf("volume %s: writing its marker at its first mount %s: %v (a marker there already: the test lost track)", vol, mountPoint, err)
		}
		_, err = f.WriteString(want)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		d.marker[vol], d.uuid[vol] = want, imageUUID(t, d.image(vol))
		t.Logf("volume %s: first mounted at %s, filesystem %s, marker written", vol, mountPoint, d.uuid[vol])
		return
	}
	if got, err := os.ReadFile(filepath.Join(mountPoint, markerFile)); err != nil || string(got) != want {
		t.Errorf("volume %s mounted at %s: its marker reads %q (%v), want %q: the volume was formatted or replaced", vol, mountPoint, got, err, want)
	}
}

// check checks every volume the test wrote a marker on: the same filesystem UUID, and the marker read where the
// volume is mounted, or from its image (debugfs, read-only) when it is not. mounts returns the paths, as this
// process reaches them, where a volume's image is mounted.
func (d *volumeData) check(t *testing.T, mounts func(img string) []string) {
	t.Helper()
	d.mu.Lock()
	vols := make(map[string]string, len(d.marker))
	for v, m := range d.marker {
		vols[v] = m
	}
	d.mu.Unlock()
	for vol, want := range vols {
		img := d.image(vol)
		if got := imageUUID(t, img); got != d.uuid[vol] {
			t.Errorf("volume %s: filesystem UUID %s, was %s: it was formatted", vol, got, d.uuid[vol])
		}
		var got []byte
		var err error
		if mps := mounts(img); len(mps) > 0 {
			got, err = os.ReadFile(filepath.Join(mps[0], markerFile))
		} else {
			got, err = exec.Command("debugfs", "-R", "cat /"+markerFile, img).Output()
		}
		if err != nil || string(got) != want {
			t.Errorf("volume %s: its marker reads %q (%v), want %q: the volume was formatted", vol, got, err, want)
		}
	}
}

// forget forgets what vol held: the test made its image blank.
func (d *volumeData) forget(vol string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.marker, vol)
	delete(d.uuid, vol)
}

// imageUUID reads the filesystem UUID of an image (blkid -p: the superblock itself, no cache).
func imageUUID(t *testing.T, img string) string {
	t.Helper()
	out, err := exec.Command("blkid", "-p", "-s", "UUID", "-o", "value", img).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("blkid -p %s: %v %q", img, err, out)
	}
	return strings.TrimSpace(string(out))
}
