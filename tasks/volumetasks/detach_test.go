package volumetasks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// contestedProvider is a fakeProvider whose node lost some volumes to another node.
type contestedProvider struct {
	*fakeProvider
	mu       sync.Mutex
	lost     map[string]*Loss // by volume
	detached []string         // the volumes DetachLost detached
}

var _ Contested = (*contestedProvider)(nil)

func (p *contestedProvider) Lost(ctx context.Context, id string) (*Loss, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost[id], nil
}

func (p *contestedProvider) DetachLost(ctx context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lost[id]
	if l == nil {
		return nil
	}
	if err := l.Refusal(); err != nil {
		return err
	}
	p.detached = append(p.detached, id)
	delete(p.lost, id)
	return nil
}

type contestedWorld struct{ p *contestedProvider }

func (w contestedWorld) VolumeProvider() Provider { return w.p }

func detachGraph(ids ...string) *engine.Graph[contestedWorld] {
	g := engine.NewGraph[contestedWorld]()
	for _, id := range ids {
		engine.Add(g, &Detach[contestedWorld]{VolumeID: id})
	}
	return g
}

func newContested(lost ...*Loss) contestedWorld {
	p := &contestedProvider{fakeProvider: &fakeProvider{c: newFakeCloud(), node: Holder{NodeID: "node-b"}}, lost: map[string]*Loss{}}
	for _, l := range lost {
		p.lost[l.VolumeID] = l
	}
	return contestedWorld{p}
}

// TestDetachLostAttachment: a dry run shows the detachment of the attachment this node lost (VolumeDetach,
// Attached true -> false) and detaches nothing; the apply detaches it, once; then a dry run has nothing to do.
// A volume this node did not lose is left alone.
func TestDetachLostAttachment(t *testing.T) {
	ctx := context.Background()
	w := newContested(&Loss{VolumeID: "a.etcd-main", Winner: Holder{NodeID: "node-a"}, Devices: []string{"/dev/fake0"}})
	res, err := engine.Run(ctx, detachGraph("a.etcd-main", "b.etcd-main"), w, engine.Options{Target: engine.DryRun, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 1 || res.Plan.Changes[0].Key.String() != "VolumeDetach/a.etcd-main" || res.Plan.Changes[0].Action != engine.Modify {
		t.Fatalf("dry run: %+v, want the modification of VolumeDetach/a.etcd-main", res.Plan.Changes)
	}
	var text bytes.Buffer
	if err := res.Plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := "Will modify resources:\n  VolumeDetach/a.etcd-main\n    Attached    true -> false\n"; !strings.Contains(text.String(), want) {
		t.Errorf("dry run report:\n%s\nwant it to hold\n%s", text.String(), want)
	}
	if len(w.p.detached) != 0 {
		t.Errorf("the dry run detached %v", w.p.detached)
	}
	enginetest.ApplyThenNoChanges(t, ctx, w, func() *engine.Graph[contestedWorld] { return detachGraph("a.etcd-main", "b.etcd-main") })
	if !slices.Equal(w.p.detached, []string{"a.etcd-main"}) {
		t.Errorf("detached %v, want a.etcd-main once", w.p.detached)
	}
}

// TestDetachRefusesInUse: an attachment whose device is mounted here is refused, in a dry run as in an apply,
// with a terminal error that names the mount point and what to do; nothing is detached.
func TestDetachRefusesInUse(t *testing.T) {
	ctx := context.Background()
	w := newContested(&Loss{VolumeID: "a.etcd-main", Winner: Holder{NodeID: "node-a", InternalIP: "10.0.0.1"}, Devices: []string{"/dev/fake0"},
		Use: DeviceUse{Mounts: []string{"/mnt/x (/dev/fake0)"}}, Fix: "fakecloud detach a.etcd-main node-b"})
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		_, err := engine.Run(ctx, detachGraph("a.etcd-main"), w, engine.Options{Target: target, Logger: quiet()})
		var te *engine.TaskError
		if !errors.As(err, &te) || engine.ClassOf(te.Err) != engine.ClassTerminal {
			t.Fatalf("%v: %v, want a terminal task error", target, err)
		}
		for _, want := range []string{"VolumeDetach/a.etcd-main", "node node-a (10.0.0.1) won it", "mounted at /mnt/x (/dev/fake0)",
			"nothing is detached", "umount /mnt/x", "detach the volume from node-a instead", "fakecloud detach a.etcd-main node-b"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %v\nwant it to say %q", target, err, want)
			}
		}
	}
	if len(w.p.detached) != 0 {
		t.Errorf("detached %v", w.p.detached)
	}
}

// TestDetachNeedsContested: a provider that attaches a volume to one node at a time cannot have lost one.
func TestDetachNeedsContested(t *testing.T) {
	w := fakeWorld{&fakeProvider{c: newFakeCloud("a"), node: Holder{NodeID: "n"}}}
	g := engine.NewGraph[fakeWorld]()
	engine.Add(g, &Detach[fakeWorld]{VolumeID: "a"})
	if _, err := engine.Run(context.Background(), g, w, engine.Options{Target: engine.DryRun, Logger: quiet()}); err == nil || !strings.Contains(err.Error(), "one node at a time") {
		t.Errorf("run: %v, want an error saying the provider cannot have lost a volume", err)
	}
	d := &Detach[fakeWorld]{VolumeID: "a"}
	enginetest.CheckDeps(t, d)
	if err := (&Detach[fakeWorld]{VolumeID: "a", Attached: true}).Validate(); err == nil {
		t.Error("Validate of Attached true: nil, want an error")
	}
}

// TestDevicesInUse: a device is in use when a mount's source is one of its names or what a name resolves to
// (mountinfo's escapes undone); names that do not exist are left out of found; an unreadable table is an error.
func TestDevicesInUse(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "dev", "nvme1n1")
	link := filepath.Join(dir, "dev", "disk", "by-id", "nvme-vol1")
	other := filepath.Join(dir, "dev", "nvme2n1")
	for _, p := range []string{dev, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(dir, "mountinfo")
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(table, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw"
	names := []string{link, filepath.Join(dir, "dev", "xvdf")} // the second does not exist

	write(root, "96 22 259:9 / /mnt/other rw shared:2 - ext4 "+other+" rw")
	use, found, err := DevicesInUse(table, names)
	if err != nil || use.InUse() || !slices.Equal(found, []string{link}) {
		t.Errorf("another device mounted: %+v, %v, %v; want not in use, found %s", use, found, err, link)
	}
	for _, source := range []string{dev, link} {
		write(root, `95 22 259:3 / /mnt/with\040space rw,relatime shared:50 - ext4 `+source+" rw,errors=remount-ro")
		use, _, err := DevicesInUse(table, names)
		if err != nil || !use.InUse() || !slices.Equal(use.Mounts, []string{"/mnt/with space (" + source + ")"}) {
			t.Errorf("mounted as %s: %+v, %v; want mounted at /mnt/with space", source, use, err)
		}
		if got := use.fix(); got != "umount '/mnt/with space'" {
			t.Errorf("fix = %q", got)
		}
	}
	if use, found, err := DevicesInUse(filepath.Join(dir, "none"), names); err == nil {
		t.Errorf("an unreadable mount table: %+v, %v; want an error", use, found)
	}
	if use, found, err := DevicesInUse(filepath.Join(dir, "none"), []string{filepath.Join(dir, "absent")}); err != nil || use.InUse() || len(found) != 0 {
		t.Errorf("no device: %+v, %v, %v; want nothing found, nothing read", use, found, err)
	}
}

// TestContestedErrorMessage: the winner's error says it waits and is not ready; the loser's that it detaches,
// is terminal and matches ErrHeld.
func TestContestedErrorMessage(t *testing.T) {
	a, b := Holder{NodeID: "n1", InternalIP: "10.0.0.1"}, Holder{NodeID: "n2", InternalIP: "10.0.0.2"}
	won := &ContestedError{VolumeID: "v", Node: "n1", Winner: a, Losers: []Holder{b}, Rule: "the earliest wins", Fix: "detach it by hand"}
	if want := "volume v is attached to 2 nodes at once, n1 (10.0.0.1) and n2 (10.0.0.2): n1 keeps it (the earliest wins); " +
		"this node neither formats nor mounts it until the others have detached it (their protokube does, once nothing there uses it); detach it by hand"; won.Error() != want {
		t.Errorf("won:\n got %s\nwant %s", won, want)
	}
	if err := won.Classified(); engine.ClassOf(err) != engine.ClassNotReady || errors.Is(err, ErrHeld) {
		t.Errorf("won: class %v, ErrHeld %v; want not ready, not held", engine.ClassOf(err), errors.Is(err, ErrHeld))
	}
	lost := &ContestedError{VolumeID: "v", Node: "n2", Winner: a, Losers: []Holder{b}, Rule: "the earliest wins"}
	if want := "this node (n2) lost it: it never formats nor mounts it, and detaches its own attachment (VolumeDetach/v) once nothing here uses it"; !strings.Contains(lost.Error(), want) {
		t.Errorf("lost: %s\nwant it to say %s", lost, want)
	}
	if err := lost.Classified(); engine.ClassOf(err) != engine.ClassTerminal || !errors.Is(err, ErrHeld) {
		t.Errorf("lost: class %v, ErrHeld %v; want terminal, held", engine.ClassOf(err), errors.Is(err, ErrHeld))
	}
}
