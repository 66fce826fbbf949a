package localtasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

func ptr[T any](v T) *T { return &v }

func TestVolumeCheckChanges(t *testing.T) {
	actual := &Volume{Name: "a.etcd-main", Zone: ptr("local-a"), SizeGB: ptr[int32](20), VolumeType: ptr("sparse")}
	tests := []struct {
		name     string
		actual   *Volume
		expected *Volume
		changes  *Volume
		wantErr  string
	}{
		{name: "create", expected: &Volume{Name: "v", Zone: ptr("z"), SizeGB: ptr[int32](1)}},
		{name: "create: zone required", expected: &Volume{Name: "v", SizeGB: ptr[int32](1)},
			wantErr: "field Zone is required to create volume v"},
		{name: "create: size required", expected: &Volume{Name: "v", Zone: ptr("z")},
			wantErr: "field SizeGB is required to create volume v"},
		{name: "bad name", expected: &Volume{Name: "../v", Zone: ptr("z"), SizeGB: ptr[int32](1)},
			wantErr: `field Name: volume name "../v" contains ".."`},
		{name: "size not positive", expected: &Volume{Name: "v", Zone: ptr("z"), SizeGB: ptr[int32](0)},
			wantErr: "field SizeGB of volume v: 0 is not a size"},
		{name: "unknown type", expected: &Volume{Name: "v", Zone: ptr("z"), SizeGB: ptr[int32](1), VolumeType: ptr("gp3")},
			wantErr: `field VolumeType of volume v: "gp3" is not a local volume type: use "sparse"`},
		{name: "empty tag key", expected: &Volume{Name: "v", Zone: ptr("z"), SizeGB: ptr[int32](1), Tags: map[string]string{"": "x"}},
			wantErr: "field Tags: volume v: a tag has an empty key"},
		{name: "grow", actual: actual, expected: &Volume{Name: "a.etcd-main", SizeGB: ptr[int32](30)},
			changes: &Volume{SizeGB: ptr[int32](30)}},
		{name: "shrink", actual: actual, expected: &Volume{Name: "a.etcd-main", SizeGB: ptr[int32](10)},
			changes: &Volume{SizeGB: ptr[int32](10)},
			wantErr: "field SizeGB: volume a.etcd-main cannot shrink from 20 GB to 10 GB: set SizeGB to 20 or more"},
		{name: "zone is immutable", actual: actual, expected: &Volume{Name: "a.etcd-main", Zone: ptr("local-b")},
			changes: &Volume{Zone: ptr("local-b")},
			wantErr: "field Zone of volume a.etcd-main cannot change from local-a to local-b"},
		{name: "retag", actual: actual, expected: &Volume{Name: "a.etcd-main", Tags: map[string]string{"a": "1"}},
			changes: &Volume{Tags: map[string]string{"a": "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := tt.changes
			if changes == nil {
				changes = tt.expected
			}
			checkErr(t, "CheckChanges", tt.expected.CheckChanges(tt.actual, tt.expected, changes), tt.wantErr)
		})
	}
}

func TestVolumeFind(t *testing.T) {
	ctx := context.Background()
	c := newCloud(t)
	mustCreate(t, c.Pool, VolumeInfo{Name: "tagged", Zone: "z", SizeGB: 2, Tags: map[string]string{"a": "1"}})
	mustCreate(t, c.Pool, VolumeInfo{Name: "bare", Zone: "z", SizeGB: 1, Tags: map[string]string{}})
	tests := []struct {
		name string
		want *Volume
	}{
		{name: "absent"},
		{name: "../escape"},
		{name: "tagged", want: &Volume{Name: "tagged", Zone: ptr("z"), SizeGB: ptr[int32](2), VolumeType: ptr("sparse"), Tags: map[string]string{"a": "1"}}},
		{name: "bare", want: &Volume{Name: "bare", Zone: ptr("z"), SizeGB: ptr[int32](1), VolumeType: ptr("sparse")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := (&Volume{Name: tt.name}).Find(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find (-want +got):\n%s", diff)
			}
		})
	}
}

func volumeGraph(v *Volume) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		copied := *v
		engine.Add(g, &copied)
		return g
	}
}

func dryRunReport(t *testing.T, c *Cloud, build func() *engine.Graph[*Cloud]) (string, error) {
	t.Helper()
	res, err := engine.Run(context.Background(), build(), c, engine.Options{Target: engine.DryRun})
	if res == nil {
		return "", err
	}
	var b bytes.Buffer
	if werr := res.Plan.WriteText(&b); werr != nil {
		t.Fatal(werr)
	}
	return b.String(), err
}

// Changes to an existing volume through the engine: grow, retag (a removed tag goes), and the refusals.
func TestVolumeChanges(t *testing.T) {
	ctx := context.Background()
	c := newCloud(t)
	base := Volume{Name: "v", Zone: ptr("local-a"), SizeGB: ptr[int32](1),
		Tags: map[string]string{"kubernetes.io/cluster/demo": "owned", "k8s.io/role/control-plane": "1"}}
	enginetest.ApplyThenNoChanges(t, ctx, c, volumeGraph(&base))

	retag := base
	retag.Tags = map[string]string{"kubernetes.io/cluster/demo": "owned"}
	report, err := dryRunReport(t, c, volumeGraph(&retag))
	if err != nil {
		t.Fatal(err)
	}
	want := `Will modify resources:
  LocalVolume/v
    Tags    {k8s.io/role/control-plane: 1, kubernetes.io/cluster/demo: owned} -> {kubernetes.io/cluster/demo: owned}
Must specify --yes to apply changes
`
	if diff := cmp.Diff(want, report); diff != "" {
		t.Errorf("retag report (-want +got):\n%s", diff)
	}
	enginetest.ApplyThenNoChanges(t, ctx, c, volumeGraph(&retag))

	untag := retag
	untag.Tags = nil
	enginetest.ApplyThenNoChanges(t, ctx, c, volumeGraph(&untag))
	if info, _ := c.Pool.Get(ctx, "v"); info.Tags != nil {
		t.Errorf("tags after removing them all: %v", info.Tags)
	}

	grow := untag
	grow.SizeGB = ptr[int32](3)
	enginetest.ApplyThenNoChanges(t, ctx, c, volumeGraph(&grow))
	img, _ := c.Pool.ImagePath("v")
	if fi, err := os.Stat(img); err != nil || fi.Size() != 3*gib {
		t.Errorf("image after growing: %v bytes, %v; want %d", fi.Size(), err, 3*gib)
	}

	for _, tt := range []struct {
		name    string
		change  func(*Volume)
		wantErr string
	}{
		{name: "shrink", change: func(v *Volume) { v.SizeGB = ptr[int32](2) },
			wantErr: "LocalVolume/v: checking changes: field SizeGB: volume v cannot shrink from 3 GB to 2 GB"},
		{name: "zone", change: func(v *Volume) { v.Zone = ptr("local-b") },
			wantErr: "LocalVolume/v: checking changes: field Zone of volume v cannot change from local-a to local-b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := grow
			tt.change(&v)
			_, err := engine.Run(ctx, volumeGraph(&v)(), c, engine.Options{Target: engine.Apply})
			checkErr(t, "apply", err, tt.wantErr)
			if info, _ := c.Pool.Get(ctx, "v"); info.SizeGB != 3 || info.Zone != "local-a" {
				t.Errorf("the volume changed after a refusal: %+v", info)
			}
		})
	}
}

func TestVolumeDeps(t *testing.T) {
	enginetest.CheckDeps(t, &Volume{Name: "v", Zone: ptr("z"), SizeGB: ptr[int32](1)})
}

// Another process (another `kubeup update cluster --yes`) creates, changes or deletes the volume between this
// run's Find and its Render: Render refuses with ErrConflict, terminal, and leaves the other's volume as it is.
func TestVolumeConflict(t *testing.T) {
	ctx := context.Background()
	mine := &Volume{Name: "v", Zone: ptr("z"), SizeGB: ptr[int32](2), Tags: map[string]string{"mine": "1"}}
	tests := []struct {
		name    string
		before  *VolumeInfo         // the volume Find sees; none when nil
		other   func(p *Pool) error // what the other process does meanwhile
		changes *Volume             // what this run's dry run found to change
		wantErr string
	}{
		{
			name: "created meanwhile",
			other: func(p *Pool) error {
				return p.Create(ctx, VolumeInfo{Name: "v", Zone: "z2", SizeGB: 1, VolumeType: VolumeTypeSparse, Tags: map[string]string{"other": "1"}})
			},
			changes: mine,
			wantErr: "volume v was created by someone else while this update ran (another `kubeup update cluster --yes`?): " +
				"nothing of it was changed; run `kubeup update cluster` again to see what is left",
		},
		{
			name:   "changed meanwhile",
			before: &VolumeInfo{Name: "v", Zone: "z", SizeGB: 1, VolumeType: VolumeTypeSparse},
			other: func(p *Pool) error {
				return p.SetTags(ctx, "v", map[string]string{"other": "1"})
			},
			changes: &Volume{SizeGB: ptr[int32](2), Tags: map[string]string{"mine": "1"}},
			wantErr: "volume v was changed by someone else while this update ran (another `kubeup update cluster --yes`?): " +
				"nothing of it was changed; run `kubeup update cluster` again to see what is left",
		},
		{
			name:    "deleted meanwhile",
			before:  &VolumeInfo{Name: "v", Zone: "z", SizeGB: 1, VolumeType: VolumeTypeSparse},
			other:   func(p *Pool) error { return p.Delete(ctx, "v") },
			changes: &Volume{SizeGB: ptr[int32](2), Tags: map[string]string{"mine": "1"}},
			wantErr: "volume v was deleted by someone else while this update ran (another `kubeup update cluster --yes`, or `kubeup delete cluster`?): " +
				"nothing was created; run `kubeup update cluster` again to see what is left",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCloud(t)
			if tt.before != nil {
				mustCreate(t, c.Pool, *tt.before)
			}
			actual, err := mine.Find(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			other, _ := NewPool(c.Pool.Dir())
			if err := tt.other(other); err != nil {
				t.Fatal(err)
			}
			theirs := snapshot(t, c.Pool.Dir())

			err = mine.Render(ctx, c, actual, mine, tt.changes)
			checkErr(t, "Render", err, tt.wantErr)
			if !errors.Is(err, ErrConflict) || engine.ClassOf(err) != engine.ClassTerminal {
				t.Errorf("Render: %v (class %v), want a terminal error that matches ErrConflict", err, engine.ClassOf(err))
			}
			if diff := cmp.Diff(theirs, snapshot(t, c.Pool.Dir())); diff != "" {
				t.Errorf("the other's volume was touched (-before +after):\n%s", diff)
			}
		})
	}
}

// snapshot is what a pool directory holds: each file's size, and the sidecars' content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = fmt.Sprint(fi.Size())
		if strings.HasSuffix(e.Name(), ".json") {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			files[e.Name()] = string(b)
		}
	}
	return files
}
