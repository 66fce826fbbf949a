package nodetasks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// fakeAttachment stands for a volume attachment (volumetasks.Attach): a task of the node whose device is known
// once it has run. Find reports device when attached is set; Render sets it.
type fakeAttachment struct {
	Name     string
	Device   *string `kubeup:"output"`
	attached bool    // the volume is attached before the run
	device   string  // the device it is attached as
}

var (
	_ DeviceSource                            = (*fakeAttachment)(nil)
	_ engine.Resource[*fakeAttachment, *Node] = (*fakeAttachment)(nil)
	_ engine.Renderer[*fakeAttachment, *Node] = (*fakeAttachment)(nil)
)

func (a *fakeAttachment) Key() engine.Key     { return engine.Key{Type: "FakeAttach", Name: a.Name} }
func (a *fakeAttachment) Deps() []engine.Task { return nil }
func (a *fakeAttachment) AttachedDevice() string {
	if a.Device == nil {
		return ""
	}
	return *a.Device
}

func (a *fakeAttachment) Find(ctx context.Context, n *Node) (*fakeAttachment, error) {
	if !a.attached {
		return nil, nil
	}
	return &fakeAttachment{Name: a.Name, Device: &a.device}, nil
}

func (a *fakeAttachment) CheckChanges(actual, expected, changes *fakeAttachment) error { return nil }

func (a *fakeAttachment) Render(ctx context.Context, n *Node, actual, expected, changes *fakeAttachment) error {
	a.attached = true
	expected.Device = &a.device
	return nil
}

func TestFormatAndMountAttachmentValidate(t *testing.T) {
	att := &fakeAttachment{Name: "v"}
	tests := []struct {
		name    string
		m       *FormatAndMount
		wantErr string
	}{
		{name: "attachment", m: &FormatAndMount{MountPoint: "/mnt/v", Attachment: att}},
		{name: "device", m: &FormatAndMount{MountPoint: "/mnt/v", Device: "/dev/loop3"}},
		{name: "both", m: &FormatAndMount{MountPoint: "/mnt/v", Device: "/dev/loop3", Attachment: att},
			wantErr: `fields Device ("/dev/loop3") and Attachment (FakeAttach/v) are both set`},
		{name: "neither", m: &FormatAndMount{MountPoint: "/mnt/v"},
			wantErr: "field Device is required: a device path such as /dev/nvme1n1, or a cloud disk name; or set Attachment"},
		{name: "bad device", m: &FormatAndMount{MountPoint: "/mnt/v", Device: "dev/loop3"},
			wantErr: `field Device: "dev/loop3" is neither a device path`},
		{name: "unclean device", m: &FormatAndMount{MountPoint: "/mnt/v", Device: "/dev/../loop3"},
			wantErr: `field Device: "/dev/../loop3" is not clean`},
		{name: "attachment and its volume", m: &FormatAndMount{MountPoint: "/mnt/v", Attachment: att, Volume: "v"}},
		{name: "volume without attachment", m: &FormatAndMount{MountPoint: "/mnt/v", Device: "/dev/loop3", Volume: "v"},
			wantErr: `field Volume ("v") names the volume Attachment attaches, but Attachment is not set`},
		{name: "volume not an id", m: &FormatAndMount{MountPoint: "/mnt/v", Attachment: att, Volume: "../v"},
			wantErr: `field Volume: "../v" is not a volume id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestFormatAndMountAttachmentDeps(t *testing.T) {
	after := []engine.Task{&File{Path: "/a"}, &File{Path: "/b"}}
	m := &FormatAndMount{MountPoint: "/m", Attachment: &fakeAttachment{Name: "v"}, After: after[:1]}
	enginetest.CheckDeps(t, m)
	deps := m.Deps()
	if len(deps) != 2 || deps[0].Key() != after[0].Key() || deps[1].Key() != (engine.Key{Type: "FakeAttach", Name: "v"}) {
		t.Errorf("Deps = %v, want File//a and FakeAttach/v", deps)
	}
	if after[1].Key().Name != "/b" {
		t.Errorf("Deps overwrote the caller's slice: %v", after)
	}
}

// An attachment that has attached nothing yet: Find sees no device (the dry run announces the format and mount),
// and Render waits (not ready) with an error that names the attachment.
func TestFormatAndMountAttachmentNotAttached(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, nil)
	m := &FormatAndMount{MountPoint: "/mnt/etcd", Attachment: &fakeAttachment{Name: "v"}}
	got, err := m.Find(ctx, n)
	if err != nil || got != nil {
		t.Fatalf("Find = %v, %v; want nil, nil", got, err)
	}
	if err := m.CheckChanges(nil, m, m); err != nil {
		t.Errorf("CheckChanges on create: %v", err)
	}
	err = m.Render(ctx, n, nil, m, m)
	if engine.ClassOf(err) != engine.ClassNotReady || err == nil || !strings.Contains(err.Error(), "FakeAttach/v has attached no device yet") {
		t.Errorf("Render = %v (%v), want not-ready naming FakeAttach/v", err, engine.ClassOf(err))
	}

	// Through the engine: the dry run announces both, changes nothing, and reads no device.
	g := engine.NewGraph[*Node]()
	att := engine.Add(g, &fakeAttachment{Name: "v", device: "/dev/nonexistent-kubeup-test"})
	engine.Add(g, &FormatAndMount{MountPoint: "/mnt/etcd", Attachment: att})
	res, err := engine.Run(ctx, g, n, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range res.Plan.Changes {
		keys = append(keys, string(c.Action)+" "+c.Key.String())
	}
	if strings.Join(keys, ", ") != "create FakeAttach/v, create FormatAndMount//mnt/etcd" {
		t.Errorf("dry run: %v, want both created", keys)
	}
	if att.attached {
		t.Error("the dry run attached")
	}
}

// A device the attachment reports is held to the rules of Device, when the task runs.
func TestFormatAndMountAttachmentBadDevice(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, nil)
	for _, dev := range []string{"dev/loop3", "/dev/../loop3", "a b"} {
		m := &FormatAndMount{MountPoint: "/mnt/etcd", Attachment: &fakeAttachment{Name: "v", Device: &dev}}
		_, err := m.Find(ctx, n)
		if err == nil || !strings.Contains(err.Error(), "field Attachment (FakeAttach/v): ") || engine.ClassOf(err) != engine.ClassTerminal {
			t.Errorf("Find with device %q: %v, want a terminal error naming the attachment", dev, err)
		}
		if err := m.Render(ctx, n, nil, m, m); err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("Render with device %q: %v, want an error", dev, err)
		}
	}
}

// Another device mounted at the mount point is refused, naming the device the attachment reports.
func TestFormatAndMountAttachmentCheckChanges(t *testing.T) {
	dev := "/dev/loop3"
	exp := &FormatAndMount{MountPoint: "/mnt/etcd", Attachment: &fakeAttachment{Name: "v", Device: &dev}}
	tests := []struct {
		name    string
		actual  *FormatAndMount
		wantErr string
	}{
		{name: "blank", actual: &FormatAndMount{found: &probe{}}},
		{name: "ext4", actual: &FormatAndMount{found: &probe{fsType: "ext4"}}},
		{name: "another device mounted", actual: &FormatAndMount{Device: "/dev/loop5", found: &probe{fsType: "ext4"}},
			wantErr: "/mnt/etcd: /dev/loop5 is mounted there, not /dev/loop3"},
		{name: "partition table", actual: &FormatAndMount{found: &probe{ptType: "gpt"}},
			wantErr: "device /dev/loop3 holds a partition table (gpt): kubeup formats only blank devices"},
		{name: "other filesystem", actual: &FormatAndMount{found: &probe{fsType: "xfs"}},
			wantErr: "device /dev/loop3 holds an xfs filesystem, not ext4: kubeup never reformats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := exp.CheckChanges(tt.actual, exp, exp)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckChanges: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckChanges = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
