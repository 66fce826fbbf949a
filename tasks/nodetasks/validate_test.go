package nodetasks

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
)

// Every node task checks its static rules in Validate, with an error that names the field and the fix.
func TestValidate(t *testing.T) {
	good := sha(kubeletBinary)
	pod := func(edit func(p *Pod)) *Pod {
		p := etcdPod()
		edit(p)
		return p
	}
	tests := []struct {
		name    string
		task    engine.Validator
		wantErr string // "" = valid
	}{
		{name: "file", task: &File{Path: "/etc/x", Contents: ptr("x"), Mode: ptr(fs.ModeSetuid | 0o755), Owner: ptr("kube-apiserver"), Group: ptr("0")}},
		{name: "file: relative", task: &File{Path: "etc/x"}, wantErr: `field Path: "etc/x" is not an absolute path`},
		{name: "file: dot-dot", task: &File{Path: "/etc/../x"}, wantErr: `field Path: "/etc/../x" is not clean: write "/x"`},
		{name: "file: NUL", task: &File{Path: "/etc/x\x00y"}, wantErr: "field Path: \"/etc/x\\x00y\" contains a NUL byte"},
		{name: "file: mode with a type bit", task: &File{Path: "/x", Mode: ptr(fs.ModeDir | 0o755)}, wantErr: "field Mode: drwxr-xr-x (020000000755) has bits other than"},
		{name: "file: setuid as a raw bit", task: &File{Path: "/x", Mode: ptr(os.FileMode(0o4755))}, wantErr: "(04755) has bits other than"},
		{name: "file: owner with a colon", task: &File{Path: "/x", Owner: ptr("root:root")}, wantErr: `field Owner: "root:root" is neither a numeric id`},
		{name: "file: group with a newline", task: &File{Path: "/x", Group: ptr("a\nb")}, wantErr: "field Group:"},
		{name: "file: negative id", task: &File{Path: "/x", Owner: ptr("-1")}, wantErr: "field Owner:"},
		{name: "file: symlink without target", task: &File{Path: "/x", Type: ptr("symlink")}, wantErr: "field Target is required"},
		{name: "manifest", task: &ManifestFile{Path: "/etc/kubernetes/manifests/etcd.manifest", Pod: etcdPod()}},
		{name: "manifest: relative", task: &ManifestFile{Path: "manifests/etcd.manifest", Pod: etcdPod()}, wantErr: "field Path:"},
		{name: "manifest: no pod", task: &ManifestFile{Path: "/m"}, wantErr: "field Pod is required"},
		{name: "manifest: container without image", task: &ManifestFile{Path: "/m", Pod: pod(func(p *Pod) { p.Spec.Containers[0].Image = "" })},
			wantErr: "field Pod: spec.containers[0] needs a name and an image"},
		{name: "manifest: relative host path", task: &ManifestFile{Path: "/m", Pod: pod(func(p *Pod) { p.Spec.Volumes[1].HostPath.Path = "etc/pki" })},
			wantErr: `field Pod: spec.volumes[1].hostPath.path: "etc/pki" is not an absolute path`},
		{name: "asset", task: &Asset{Path: "/usr/local/bin/kubelet", URL: "https://dl.k8s.io/kubelet", SHA256: good, Mode: ptr(os.FileMode(0o755))}},
		{name: "asset: no hash", task: &Asset{Path: "/x", URL: "https://dl.k8s.io/kubelet"}, wantErr: "field SHA256 is required"},
		{name: "asset: mode", task: &Asset{Path: "/x", URL: "https://h/k", SHA256: good, Mode: ptr(fs.ModeSymlink | 0o777)}, wantErr: "field Mode:"},
		{name: "service", task: &SystemdService{Name: "kubelet.service", DropIns: map[string]string{"10-kubeup.conf": ""}}},
		{name: "service: template instance", task: &SystemdService{Name: "getty@tty1.service"}},
		{name: "service: no suffix", task: &SystemdService{Name: "kubelet"}, wantErr: `field Name: "kubelet" is not a unit name`},
		{name: "service: path", task: &SystemdService{Name: "../kubelet.service"}, wantErr: "field Name:"},
		{name: "service: newline", task: &SystemdService{Name: "a\nb.service"}, wantErr: "field Name:"},
		{name: "service: hidden drop-in", task: &SystemdService{Name: "k.service", DropIns: map[string]string{".conf": ""}}, wantErr: "field DropIns:"},
		{name: "mount", task: &FormatAndMount{MountPoint: "/mnt/etcd", Device: "vol-0abc123", FSType: ptr("xfs"), Options: []string{"noatime"}}},
		{name: "mount: device path", task: &FormatAndMount{MountPoint: "/mnt/etcd", Device: "/dev/disk/by-id/nvme-x"}},
		{name: "mount: relative mount point", task: &FormatAndMount{MountPoint: "mnt", Device: "/dev/x"}, wantErr: "field MountPoint:"},
		{name: "mount: no device", task: &FormatAndMount{MountPoint: "/m"}, wantErr: "field Device is required"},
		{name: "mount: device climbing", task: &FormatAndMount{MountPoint: "/m", Device: "../../sda"}, wantErr: `field Device: "../../sda" is neither`},
		{name: "mount: unclean device path", task: &FormatAndMount{MountPoint: "/m", Device: "/dev/../sda"}, wantErr: "field Device:"},
		{name: "mount: fstype", task: &FormatAndMount{MountPoint: "/m", Device: "/dev/x", FSType: ptr("ext4 -o x")}, wantErr: "field FSType:"},
		{name: "mount: two options in one", task: &FormatAndMount{MountPoint: "/m", Device: "/dev/x", Options: []string{"a,b"}},
			wantErr: `field Options: "a,b" is not one mount option`},
		{name: "mount: an operation", task: &FormatAndMount{MountPoint: "/m", Device: "/dev/x", Options: []string{"bind"}},
			wantErr: `field Options: "bind" is an operation`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.task.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// tree returns every path under root with its contents (directories and links by kind), to compare a node before
// and after a run.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			out[rel] = "directory"
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// One task with a bad path stops the whole run before anything is written: no half-converged node.
func TestOneBadTaskChangesNothing(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, map[string]string{"/usr/local/bin/kubelet": kubeletBinary, "/etc/kubernetes/kubelet.conf": "old\n"})
	before := tree(t, n.Root)
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		g := kubeletGraph("a: 1\n")()
		engine.Add(g, &File{Path: "/etc/kubernetes/kubelet.conf", Contents: ptr("new\n")})
		engine.Add(g, &ManifestFile{Path: "/etc/kubernetes/manifests/../kube-apiserver.manifest", Pod: etcdPod()})
		_, err := engine.Run(ctx, g, n, engine.Options{Target: target})
		if err == nil || !strings.Contains(err.Error(), `field Path: "/etc/kubernetes/manifests/../kube-apiserver.manifest" is not clean`) {
			t.Errorf("%s: error %v, want the bad path named", target, err)
		}
		if diff := cmp.Diff(before, tree(t, n.Root)); diff != "" {
			t.Errorf("%s changed the node although one task is invalid (-before +after):\n%s", target, diff)
		}
	}
}
