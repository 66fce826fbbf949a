package localtasks

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func newPool(t *testing.T) *Pool {
	t.Helper()
	p, err := NewPool(filepath.Join(t.TempDir(), "pool"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustCreate(t *testing.T, p *Pool, v VolumeInfo) {
	t.Helper()
	if v.VolumeType == "" {
		v.VolumeType = VolumeTypeSparse
	}
	if err := p.Create(context.Background(), v); err != nil {
		t.Fatal(err)
	}
}

func TestPoolCreateIsSparse(t *testing.T) {
	ctx := context.Background()
	p := newPool(t)
	mustCreate(t, p, VolumeInfo{Name: "a.etcd-main.demo.example.com", Zone: "local-a", SizeGB: 20,
		Tags: map[string]string{"k8s.io/etcd/main": "a/a,b,c"}})

	img, _ := p.ImagePath("a.etcd-main.demo.example.com")
	fi, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 20*gib {
		t.Errorf("image size = %d, want %d", fi.Size(), 20*gib)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("image mode = %v, want 0600", fi.Mode().Perm())
	}
	if used, ok := allocated(fi); !ok || used > 1<<20 {
		t.Errorf("image uses %d bytes of storage (known: %v), want about 0: it must be sparse", used, ok)
	}

	b, err := os.ReadFile(filepath.Join(p.Dir(), "a.etcd-main.demo.example.com.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "name": "a.etcd-main.demo.example.com",
  "sizeGB": 20,
  "tags": {
    "k8s.io/etcd/main": "a/a,b,c"
  },
  "volumeType": "sparse",
  "zone": "local-a"
}
`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("sidecar (-want +got):\n%s", diff)
	}

	err = p.Create(ctx, VolumeInfo{Name: "a.etcd-main.demo.example.com", Zone: "local-a", SizeGB: 20, VolumeType: VolumeTypeSparse})
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create of an existing volume: %v, want fs.ErrExist", err)
	}
}

func TestPoolGrowNeverShrinks(t *testing.T) {
	ctx := context.Background()
	p := newPool(t)
	mustCreate(t, p, VolumeInfo{Name: "v", Zone: "z", SizeGB: 1})
	if err := p.Grow(ctx, "v", 3); err != nil {
		t.Fatal(err)
	}
	img, _ := p.ImagePath("v")
	if fi, err := os.Stat(img); err != nil || fi.Size() != 3*gib {
		t.Errorf("image after Grow: %v, %v; want %d bytes", fi.Size(), err, 3*gib)
	}
	err := p.Grow(ctx, "v", 2)
	if err == nil || !strings.Contains(err.Error(), "volume v cannot shrink from 3 GB to 2 GB") {
		t.Errorf("Grow to a smaller size: %v, want a refusal", err)
	}
	got, err := p.Get(ctx, "v")
	if err != nil || got.SizeGB != 3 {
		t.Errorf("Get after a refused shrink: %+v, %v; want 3 GB", got, err)
	}
}

func TestPoolListFilter(t *testing.T) {
	ctx := context.Background()
	p := newPool(t)
	mustCreate(t, p, VolumeInfo{Name: "a", Zone: "z", SizeGB: 1, Tags: map[string]string{"cluster": "demo", "role": "main"}})
	mustCreate(t, p, VolumeInfo{Name: "b", Zone: "z", SizeGB: 1, Tags: map[string]string{"cluster": "demo", "role": "events"}})
	mustCreate(t, p, VolumeInfo{Name: "c", Zone: "z", SizeGB: 1, Tags: map[string]string{"cluster": "other", "role": ""}})
	mustCreate(t, p, VolumeInfo{Name: "d", Zone: "z", SizeGB: 1})
	// Files that are not volumes' are ignored.
	for _, name := range []string{".a.json.tmp-123", "README", "Upper.json"} {
		if err := os.WriteFile(filepath.Join(p.Dir(), name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		filter map[string]string
		want   []string
	}{
		{name: "nil matches all", want: []string{"a", "b", "c", "d"}},
		{name: "empty matches all", filter: map[string]string{}, want: []string{"a", "b", "c", "d"}},
		{name: "one key and value", filter: map[string]string{"cluster": "demo"}, want: []string{"a", "b"}},
		{name: "every key must match", filter: map[string]string{"cluster": "demo", "role": "main"}, want: []string{"a"}},
		{name: "empty value: any value", filter: map[string]string{"role": ""}, want: []string{"a", "b", "c"}},
		{name: "missing key", filter: map[string]string{"zone": ""}, want: nil},
		{name: "wrong value", filter: map[string]string{"cluster": "nope"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vols, err := p.List(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vols {
				got = append(got, v.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
	if vols, err := (&Pool{dir: filepath.Join(t.TempDir(), "none")}).List(ctx, nil); err != nil || vols != nil {
		t.Errorf("List of a pool not yet created: %v, %v; want nothing", vols, err)
	}
}

// SetTags replaces the tags as a whole, and keeps the fields of the sidecar this version does not know.
func TestPoolSetTagsKeepsUnknownFields(t *testing.T) {
	ctx := context.Background()
	p := newPool(t)
	sidecar := `{"name": "v", "zone": "z", "sizeGB": 1, "volumeType": "sparse", "tags": {"a": "1", "b": "2"}, "claim": {"node": "n1"}}`
	if err := os.MkdirAll(p.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Dir(), "v.json"), []byte(sidecar), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Dir(), "v.img"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.SetTags(ctx, "v", map[string]string{"a": "1"}); err != nil {
		t.Fatal(err)
	}
	got, err := p.Get(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&VolumeInfo{Name: "v", Zone: "z", SizeGB: 1, VolumeType: "sparse", Tags: map[string]string{"a": "1"}}, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	var raw map[string]any
	b, _ := os.ReadFile(filepath.Join(p.Dir(), "v.json"))
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"node": "n1"}, raw["claim"]); diff != "" {
		t.Errorf("unknown field claim (-want +got):\n%s", diff)
	}
	if err := p.SetTags(ctx, "v", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Get(ctx, "v"); got.Tags != nil {
		t.Errorf("tags after SetTags(nil) = %v, want none", got.Tags)
	}
	if err := p.SetTags(ctx, "missing", nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetTags of a missing volume: %v, want fs.ErrNotExist", err)
	}
}

// What a crash leaves behind: an image without its sidecar is adopted if it holds no data, refused if it might;
// a sidecar without its image is an error for Get, and Delete finishes the job.
func TestPoolCrashLeftovers(t *testing.T) {
	ctx := context.Background()
	p := newPool(t)
	if err := os.MkdirAll(p.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(p.Dir(), "blank.img")
	if err := os.WriteFile(blank, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blank, gib); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, p, VolumeInfo{Name: "blank", Zone: "z", SizeGB: 2})

	data := filepath.Join(p.Dir(), "data.img")
	if err := os.WriteFile(data, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := p.Create(ctx, VolumeInfo{Name: "data", Zone: "z", SizeGB: 1, VolumeType: VolumeTypeSparse})
	if err == nil || !strings.Contains(err.Error(), "may hold data") {
		t.Errorf("Create over an image with data: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(data); string(b) != "precious" {
		t.Errorf("the image with data was changed: %q", b)
	}

	mustCreate(t, p, VolumeInfo{Name: "gone", Zone: "z", SizeGB: 1})
	img, _ := p.ImagePath("gone")
	if err := os.Remove(img); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctx, "gone"); err == nil || !strings.Contains(err.Error(), "image "+img+" is missing") {
		t.Errorf("Get of a volume without its image: %v", err)
	}
	if err := p.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, "gone"); err != nil {
		t.Errorf("Delete of an absent volume: %v", err)
	}
	if v, err := p.Get(ctx, "gone"); v != nil || err != nil {
		t.Errorf("Get after Delete: %v, %v", v, err)
	}
}

func TestValidateVolumeName(t *testing.T) {
	for _, tt := range []struct{ name, wantErr string }{
		{name: "a.etcd-main.demo.example.com"},
		{name: "vol_1"},
		{name: "", wantErr: "empty"},
		{name: "../etc/passwd", wantErr: `contains ".."`},
		{name: "a/b", wantErr: `has '/'`},
		{name: ".hidden", wantErr: "must start with"},
		{name: "Upper", wantErr: "must start with"},
		{name: "a b", wantErr: `has ' '`},
		{name: strings.Repeat("a", 201), wantErr: "longer than 200"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, "validateVolumeName", validateVolumeName(tt.name), tt.wantErr)
		})
	}
	if err := newPool(t).Delete(context.Background(), "../x"); err == nil {
		t.Error("Delete accepted a name with ..")
	}
}

// Two pools on one directory stand for two processes: only the flock keeps them from losing each other's
// writes.
func TestPoolConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	p1 := newPool(t)
	p2, _ := NewPool(p1.Dir())
	mustCreate(t, p1, VolumeInfo{Name: "shared", Zone: "z", SizeGB: 1})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := []*Pool{p1, p2}[i%2]
			name := "v" + string(rune('a'+i))
			if err := p.Create(ctx, VolumeInfo{Name: name, Zone: "z", SizeGB: 1, VolumeType: VolumeTypeSparse}); err != nil {
				t.Error(err)
			}
			if err := p.SetTags(ctx, name, map[string]string{"i": name}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	vols, err := p1.List(ctx, map[string]string{"i": ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 20 {
		t.Errorf("%d tagged volumes, want 20", len(vols))
	}
}

func checkErr(t *testing.T, what string, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", what, err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("%s error = %v, want one containing %q", what, err, wantErr)
	}
}
