package nodetasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"

	"kubeup.dev/kubeup/internal/mountinfo"
)

func TestParseBlkid(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want probe
	}{
		{name: "ext4", out: "DEVNAME=/dev/loop0\nUUID=d4df5823-33ef-4f12-ad35-ba30efc626ac\nVERSION=1.0\nBLOCK_SIZE=1024\nTYPE=ext4\nUSAGE=filesystem\n",
			want: probe{fsType: "ext4", uuid: "d4df5823-33ef-4f12-ad35-ba30efc626ac"}},
		{name: "partition table", out: "DEVNAME=/dev/loop0\nPTUUID=1234\nPTTYPE=dos\n", want: probe{ptType: "dos"}},
		{name: "unnamed signature", out: "DEVNAME=/dev/loop0\nUSAGE=raid\n", want: probe{other: "a signature of usage raid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseBlkid([]byte(tt.out)), cmp.AllowUnexported(probe{})); diff != "" {
				t.Errorf("parseBlkid (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPresentOptions(t *testing.T) {
	m := &mountinfo.Parse("42 27 7:3 / /mnt/etcd\\040main rw,noatime shared:1 - ext4 /dev/loop3 rw,errors=remount-ro\n")[0]
	if got := presentOptions([]string{"noatime", "nofail", "discard"}, m); !cmp.Equal(got, []string{"noatime", "nofail"}) {
		t.Errorf("presentOptions = %v, want [noatime nofail]", got)
	}
}

func TestResolveDevice(t *testing.T) {
	byID := t.TempDir()
	for link, target := range map[string]string{
		"nvme-Amazon_Elastic_Block_Store_vol0abc123": "/dev/null",
		"google-etcd-main-a":                         "/dev/zero",
	} {
		if err := os.Symlink(target, filepath.Join(byID, link)); err != nil {
			t.Fatal(err)
		}
	}
	n := &Node{diskByID: byID}
	for name, want := range map[string]string{
		"vol-0abc123":       "/dev/null",
		"etcd-main-a":       "/dev/zero",
		"vol-0missing":      "",
		"/dev/null":         "/dev/null",
		"/dev/nonexistent1": "",
	} {
		got, err := n.resolveDevice(name)
		if err != nil || got != want {
			t.Errorf("resolveDevice(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestFormatAndMountCheckChanges(t *testing.T) {
	exp := &FormatAndMount{MountPoint: "/mnt/etcd", Device: "/dev/loop3"}
	tests := []struct {
		name     string
		actual   *FormatAndMount
		expected *FormatAndMount
		wantErr  string
	}{
		{name: "blank device", expected: exp, actual: &FormatAndMount{Device: "/dev/loop3", found: &probe{}}},
		{name: "device not attached", expected: exp},
		{name: "ext4 to mount", expected: exp, actual: &FormatAndMount{Device: "/dev/loop3", found: &probe{fsType: "ext4"}}},
		{name: "no device", expected: &FormatAndMount{MountPoint: "/mnt/x"}, wantErr: "field Device is required"},
		{name: "relative mount point", expected: &FormatAndMount{MountPoint: "mnt", Device: "/dev/x"}, wantErr: "field MountPoint"},
		{name: "bad option", expected: &FormatAndMount{MountPoint: "/m", Device: "/dev/x", Options: []string{"a,b"}},
			wantErr: `field Options: "a,b" is not one mount option`},
		{name: "another device mounted", expected: exp, actual: &FormatAndMount{Device: "/dev/loop5", found: &probe{fsType: "ext4"}},
			wantErr: "/mnt/etcd: /dev/loop5 is mounted there, not /dev/loop3"},
		{name: "partition table", expected: exp, actual: &FormatAndMount{Device: "/dev/loop3", found: &probe{ptType: "gpt"}},
			wantErr: "device /dev/loop3 holds a partition table (gpt): kubeup formats only blank devices"},
		{name: "other filesystem", expected: exp, actual: &FormatAndMount{Device: "/dev/loop3", found: &probe{fsType: "xfs"}},
			wantErr: "device /dev/loop3 holds an xfs filesystem, not ext4: kubeup never reformats"},
		{name: "unknown signature", expected: exp, actual: &FormatAndMount{Device: "/dev/loop3", found: &probe{other: "partitions"}},
			wantErr: "holds partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.expected.CheckChanges(tt.actual, tt.expected, tt.expected)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckChanges: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckChanges error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// A device that is not attached yet: the dry run announces the mount, the apply waits for the device.
func TestFormatAndMountDeviceNotThere(t *testing.T) {
	n := testNode(t, nil)
	m := &FormatAndMount{MountPoint: "/mnt/etcd", Device: "vol-0notattached"}
	got, err := m.Find(context.Background(), n)
	if err != nil || got != nil {
		t.Fatalf("Find = %v, %v; want nil, nil", got, err)
	}
	if m.FSType == nil || *m.FSType != "ext4" {
		t.Errorf("Find left FSType %v, want ext4", m.FSType)
	}
	err = m.Render(context.Background(), n, nil, m, m)
	if engine.ClassOf(err) != engine.ClassNotReady {
		t.Errorf("Render error %v has class %v, want not-ready", err, engine.ClassOf(err))
	}
}

func TestFormatAndMountDeps(t *testing.T) {
	enginetest.CheckDeps(t, &FormatAndMount{MountPoint: "/m", Device: "/dev/x", After: []engine.Task{&File{Path: "/y"}}})
}
