package volumetasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// fakeCloud is an in-memory cloud of volumes, shared by the fake providers of several nodes.
type fakeCloud struct {
	mu      sync.Mutex
	volumes map[string]*fakeVolume
	attachs int // calls of Attach
	asked   int // calls of Attached
	next    int // the next device number
}

type fakeVolume struct {
	vol    Volume
	device string // where it is attached on its holder; "" when not attached
}

func newFakeCloud(ids ...string) *fakeCloud {
	c := &fakeCloud{volumes: map[string]*fakeVolume{}}
	for _, id := range ids {
		c.volumes[id] = &fakeVolume{vol: Volume{ID: id, Zone: "z1", Tags: map[string]string{"k8s.io/etcd/main": id}}}
	}
	return c
}

// fakeProvider is one node's view of a fakeCloud.
type fakeProvider struct {
	c    *fakeCloud
	node Holder
}

var (
	_ Provider = (*fakeProvider)(nil)
	_ World    = fakeWorld{}
)

func (p *fakeProvider) Node() Holder { return p.node }

func (p *fakeProvider) List(ctx context.Context, filter map[string]string) ([]Volume, error) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	var out []Volume
	for _, v := range p.c.volumes {
		match := true
		for k, want := range filter {
			if got, ok := v.vol.Tags[k]; !ok || want != "" && got != want {
				match = false
			}
		}
		if match {
			vol := v.vol
			vol.Tags = maps.Clone(vol.Tags)
			out = append(out, vol)
		}
	}
	slices.SortFunc(out, func(a, b Volume) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (p *fakeProvider) Attach(ctx context.Context, id string) (string, error) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.c.attachs++
	v, ok := p.c.volumes[id]
	switch {
	case !ok:
		return "", fmt.Errorf("volume %s does not exist", id)
	case v.vol.Holder != nil && v.vol.Holder.NodeID != p.node.NodeID:
		return "", &HeldError{VolumeID: id, Holder: *v.vol.Holder}
	case v.device != "":
		return v.device, nil
	}
	h := p.node
	v.vol.Holder = &h
	v.device = fmt.Sprintf("/dev/fake%d", p.c.next)
	p.c.next++
	return v.device, nil
}

func (p *fakeProvider) Attached(ctx context.Context, id string) (string, error) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.c.asked++
	if v, ok := p.c.volumes[id]; ok && v.vol.Holder != nil && v.vol.Holder.NodeID == p.node.NodeID {
		return v.device, nil
	}
	return "", nil
}

func (p *fakeProvider) Detach(ctx context.Context, id string) error {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if v, ok := p.c.volumes[id]; ok && v.vol.Holder != nil && v.vol.Holder.NodeID == p.node.NodeID {
		v.vol.Holder, v.device = nil, ""
	}
	return nil
}

type fakeWorld struct{ p *fakeProvider }

func (w fakeWorld) VolumeProvider() Provider { return w.p }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func attachGraph(ids ...string) func() *engine.Graph[fakeWorld] {
	return func() *engine.Graph[fakeWorld] {
		g := engine.NewGraph[fakeWorld]()
		for _, id := range ids {
			engine.Add(g, &Attach[fakeWorld]{VolumeID: id})
		}
		return g
	}
}

func TestAttachApplyThenNoChanges(t *testing.T) {
	ctx := context.Background()
	c := newFakeCloud("a.etcd-main", "b.etcd-main")
	w := fakeWorld{&fakeProvider{c: c, node: Holder{NodeID: "node-a", InternalIP: "10.0.0.1"}}}
	applied := enginetest.ApplyThenNoChanges(t, ctx, w, attachGraph("a.etcd-main", "b.etcd-main"))
	var got []string
	for _, ch := range applied.Changes {
		got = append(got, string(ch.Action)+" "+ch.Key.String())
	}
	want := []string{"create VolumeAttach/a.etcd-main", "create VolumeAttach/b.etcd-main"}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("applied changes (-want +got):\n%s", diff)
	}

	// A dry run of a converged node reports no change, and still hands the device to dependents.
	g := engine.NewGraph[fakeWorld]()
	a := engine.Add(g, &Attach[fakeWorld]{VolumeID: "a.etcd-main"})
	if a.AttachedDevice() != "" {
		t.Fatalf("AttachedDevice before the run = %q, want \"\"", a.AttachedDevice())
	}
	res, err := engine.Run(ctx, g, w, engine.Options{Target: engine.DryRun, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan.Empty() {
		t.Errorf("dry run of an attached volume reports changes: %+v", res.Plan.Changes)
	}
	if got, _ := w.p.Attached(ctx, "a.etcd-main"); a.AttachedDevice() != got || got == "" {
		t.Errorf("AttachedDevice after a dry run = %q, want the attached device %q", a.AttachedDevice(), got)
	}
}

func TestAttachDryRunChangesNothing(t *testing.T) {
	c := newFakeCloud("a.etcd-main")
	w := fakeWorld{&fakeProvider{c: c, node: Holder{NodeID: "node-a"}}}
	g := attachGraph("a.etcd-main")()
	res, err := engine.Run(context.Background(), g, w, engine.Options{Target: engine.DryRun, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 1 || res.Plan.Changes[0].Action != engine.Create {
		t.Errorf("dry run: %+v, want one create", res.Plan.Changes)
	}
	if c.attachs != 0 || c.volumes["a.etcd-main"].vol.Holder != nil {
		t.Errorf("the dry run attached: %d calls, holder %v", c.attachs, c.volumes["a.etcd-main"].vol.Holder)
	}
}

// A volume another node holds fails the task at once (no retries), with an error that names the volume and the
// holder, and matches ErrHeld.
func TestAttachHeldIsTerminal(t *testing.T) {
	ctx := context.Background()
	c := newFakeCloud("a.etcd-main")
	b := fakeWorld{&fakeProvider{c: c, node: Holder{NodeID: "node-b", InternalIP: "10.0.0.2"}}}
	if _, err := b.p.Attach(ctx, "a.etcd-main"); err != nil {
		t.Fatal(err)
	}
	a := fakeWorld{&fakeProvider{c: c, node: Holder{NodeID: "node-a"}}}
	c.attachs = 0
	_, err := engine.Run(ctx, attachGraph("a.etcd-main")(), a, engine.Options{Target: engine.Apply, Logger: quiet()})
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("apply: %v, want an error matching ErrHeld", err)
	}
	var he *HeldError
	if !errors.As(err, &he) || he.Holder.NodeID != "node-b" || he.VolumeID != "a.etcd-main" {
		t.Errorf("apply: %v, want a HeldError of a.etcd-main by node-b", err)
	}
	for _, want := range []string{"VolumeAttach/a.etcd-main", "attaching volume a.etcd-main to node node-a",
		"held by node node-b (10.0.0.2)", "free once node-b releases it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	var te *engine.TaskError
	if !errors.As(err, &te) || engine.ClassOf(te.Err) != engine.ClassTerminal {
		t.Errorf("error class: want terminal, got %v", err)
	}
	if c.attachs != 1 {
		t.Errorf("Attach called %d times, want once (a held volume is not retried)", c.attachs)
	}
	if dev, _ := a.p.Attached(ctx, "a.etcd-main"); dev != "" {
		t.Errorf("node-a has the volume at %s", dev)
	}
}

func TestAttachValidate(t *testing.T) {
	tests := []struct {
		id      string
		wantErr string
	}{
		{id: "a.etcd-main"},
		{id: "vol-0abc123"},
		{id: "", wantErr: "field VolumeID is required"},
		{id: "a/b", wantErr: `field VolumeID: "a/b" is not a volume id: it has '/'`},
		{id: "a b", wantErr: `it has ' '`},
		{id: "a\x00", wantErr: `it has '\x00'`},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := (&Attach[fakeWorld]{VolumeID: tt.id}).Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	// The engine runs Validate before any Find: a bad id stops the graph before anything is attached.
	c := newFakeCloud("a")
	w := fakeWorld{&fakeProvider{c: c, node: Holder{NodeID: "n"}}}
	var ve *engine.ValidationError
	if _, err := engine.Run(context.Background(), attachGraph("a", "")(), w, engine.Options{Target: engine.Apply}); !errors.As(err, &ve) {
		t.Errorf("run with an empty volume id: %v, want a ValidationError", err)
	}
	if c.attachs != 0 {
		t.Errorf("attached %d volumes of an invalid graph", c.attachs)
	}
}

func TestAttachDeps(t *testing.T) {
	a := &Attach[fakeWorld]{VolumeID: "a"}
	enginetest.CheckDeps(t, a)
	if got := a.Key().String(); got != "VolumeAttach/a" {
		t.Errorf("key %s, want VolumeAttach/a", got)
	}
	var _ engine.Classed = a
	if a.APIClass() != "volumes" {
		t.Errorf("APIClass %q, want volumes", a.APIClass())
	}
}

func TestHeldErrorMessage(t *testing.T) {
	err := error(&HeldError{VolumeID: "v", Holder: Holder{NodeID: "n2", InternalIP: "10.0.0.2", ExternalIP: "203.0.113.2"},
		Fix: "remove /pool/v.claim once n2 no longer uses it"})
	want := "volume v is held by node n2 (10.0.0.2, external 203.0.113.2): a volume is held by one node at a time; " +
		"it is free once n2 releases it; remove /pool/v.claim once n2 no longer uses it"
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
	if !errors.Is(fmt.Errorf("wrapped: %w", err), ErrHeld) {
		t.Error("a wrapped HeldError does not match ErrHeld")
	}
}

// TestAttachPrefetch: what Prefetch found serves the first Find, so that a graph builder that asked where the
// volume is attached costs the provider no second call; a dry run after it still reports nothing to do and hands
// the device on.
func TestAttachPrefetch(t *testing.T) {
	ctx := context.Background()
	c := newFakeCloud("a.etcd-main")
	w := fakeWorld{&fakeProvider{c: c, node: Holder{NodeID: "node-a"}}}
	want, err := w.p.Attach(ctx, "a.etcd-main")
	if err != nil {
		t.Fatal(err)
	}
	g := engine.NewGraph[fakeWorld]()
	a := engine.Add(g, &Attach[fakeWorld]{VolumeID: "a.etcd-main"})
	c.asked = 0
	if dev, err := a.Prefetch(ctx, w); dev != want || err != nil {
		t.Fatalf("Prefetch = %q, %v; want %q", dev, err, want)
	}
	res, err := engine.Run(ctx, g, w, engine.Options{Target: engine.DryRun, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan.Empty() || a.AttachedDevice() != want {
		t.Errorf("dry run after Prefetch: changes %+v, device %q; want none, %q", res.Plan.Changes, a.AttachedDevice(), want)
	}
	if c.asked != 1 {
		t.Errorf("the provider was asked %d times where the volume is attached, want once (Prefetch's answer serves Find)", c.asked)
	}
	if _, err := a.Find(ctx, w); err != nil || c.asked != 2 {
		t.Errorf("a second Find: %v, %d calls; want it to ask the provider", err, c.asked)
	}
}
