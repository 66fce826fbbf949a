package model_test

import (
	"errors"
	"io/fs"
	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/model"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// nodeupObjects are the objects a local cloud graph of c writes under <cluster>/nodeup, by path, as a dry run
// makes them (every keypair PendingPEM).
func nodeupObjects(t *testing.T, c *model.Cluster, igs []*model.InstanceGroup) map[string]string {
	t.Helper()
	g, err := cloudgraph.BuildLocalCloudGraph(c, igs, cloudgraph.LocalCloudState{})
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]string{}
	for _, task := range g.Tasks() {
		f, ok := task.(*storetasks.SecretFile[*localtasks.Cloud])
		if !ok || !strings.Contains(f.Path, "/nodeup/") {
			continue
		}
		if err := f.Resolve(); err != nil {
			t.Fatal(err)
		}
		objects[f.Path] = f.Contents.Reveal()
	}
	return objects
}

// besideIn reads the objects beside a node configuration from objects (by store path); read, when not nil,
// may change what is read.
func besideIn(objects map[string]string, conf string, read func(name, obj string) string) model.ReadBeside {
	return func(name string) (string, []byte, error) {
		p := path.Join(path.Dir(conf), name)
		obj, ok := objects[p]
		if !ok {
			return p, nil, fs.ErrNotExist
		}
		if read != nil {
			obj = read(name, obj)
		}
		return p, []byte(obj), nil
	}
}

// TestMemberFilesStoredOnce is issue 23's quadratic plan: each control-plane group's node configuration held
// every etcd member's certificates and keys and the whole spec, so M groups stored (and a plan encoded,
// redacted and compared) M copies of what grows with M. Now the control-plane role's configuration holds each
// member's files once, and a group's configuration holds neither spec nor files.
func TestMemberFilesStoredOnce(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 3)
	objects := nodeupObjects(t, c, igs)
	for _, e := range c.Spec.EtcdClusters {
		for _, m := range e.Members {
			key := model.EtcdMemberPKI(e.Name, m.Name).PeerKey
			copies := 0
			for _, obj := range objects {
				copies += strings.Count(obj, "path: "+key+"\n")
			}
			if copies != 1 {
				t.Errorf("%s is stored %d times under nodeup/, want once (in %s)", key, copies, model.RoleConfigName(model.RoleControlPlane))
			}
		}
	}
	for _, ig := range igs {
		obj := objects[model.NodeConfigPath(c.Metadata.Name, ig.Metadata.Name)]
		for _, held := range []string{"\ncluster:", "\nfiles:", "\nprotokube:", "etcdClusters"} {
			if strings.Contains(obj, held) {
				t.Errorf("the node configuration of %s holds %q: its role's configuration holds it, once", ig.Metadata.Name, strings.TrimSpace(held))
			}
		}
	}
}

// TestStoredNodeConfigIsWhole: a group's stored configuration, read with its role's beside it, is the whole
// configuration kubeup derives for the group (NewNodeConfig, AddKeystoreFiles), and a node writes back both
// objects byte for byte (what protokube reads, and what a rolling update compares).
func TestStoredNodeConfigIsWhole(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 3)
	objects := nodeupObjects(t, c, igs)
	for _, ig := range igs {
		p := model.NodeConfigPath(c.Metadata.Name, ig.Metadata.Name)
		got, err := model.DecodeNodeConfigObject(p, []byte(objects[p]), besideIn(objects, p, nil))
		if err != nil {
			t.Fatalf("%s: %v", ig.Metadata.Name, err)
		}
		want := model.NewNodeConfig(c, ig)
		if err := want.AddKeystoreFiles(model.Issued{}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(model.NodeConfig{}, "RoleConfig"), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: read back (-derived +read):\n%s", ig.Metadata.Name, diff)
		}
		again, err := got.Encode()
		if err != nil || string(again) != objects[p] {
			t.Errorf("%s: encoded again, the configuration is not the stored object (%v)", ig.Metadata.Name, err)
		}
		role, err := got.RoleObject()
		if err != nil || string(role) != objects[model.RoleConfigPath(c.Metadata.Name, ig.Spec.Role)] {
			t.Errorf("%s: encoded again, the role's configuration is not the stored object (%v)", ig.Metadata.Name, err)
		}
	}
}

// TestRoleConfigRefused: a node uses only its own role's configuration, beside its own, the one its
// configuration pins, and whole; anything else is refused with the field and the fix, or, for one out of step
// (read while the other was being written), a *NodeConfigSumError the reader waits on.
func TestRoleConfigRefused(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 1)
	objects := nodeupObjects(t, c, igs)
	conf := model.NodeConfigPath(c.Metadata.Name, "control-plane-a")
	stored := objects[conf]
	// reseal replaces old by new in an object's YAML and writes its first line again.
	reseal := func(obj, old, new string) string {
		_, rest, _ := strings.Cut(obj, "\n")
		if !strings.Contains(rest, old) {
			t.Fatalf("no %q in the object", old)
		}
		rest = strings.Replace(rest, old, new, 1)
		return string(model.WithSumLine([]byte(rest), model.Sha256Hex([]byte(rest))))
	}
	refName := "object: " + model.RoleConfigName(model.RoleControlPlane)
	tests := []struct {
		name       string
		conf       string
		read       func(name, obj string) string
		beside     bool // false: no ReadBeside at all
		want       []string
		sumPinned  bool
		notPresent bool
	}{
		{name: "another path", conf: reseal(stored, refName, "object: ../../../etc/shadow"), beside: true,
			want: []string{"roleConfig.object", `the configuration of role ControlPlane is "ControlPlane.role"`}},
		{name: "another role's", conf: reseal(stored, refName, "object: "+model.RoleConfigName(model.RoleNode)), beside: true,
			want: []string{"roleConfig.object", "Node.role"}},
		{name: "sha256 not hex", conf: reseal(stored, "sha256: ", "sha256: X"), beside: true,
			want: []string{"roleConfig.sha256", "lower-case hex"}},
		{name: "spec beside the reference", conf: reseal(stored, "kind: NodeConfig\n", "kind: NodeConfig\nprotokube: {}\n"), beside: true,
			want: []string{"protokube: set, but a configuration that names its role's configuration"}},
		{name: "role's configuration changed since", conf: stored, beside: true,
			read:      func(_, obj string) string { return reseal(obj, "dnsZone: example.com", "dnsZone: example.org") },
			want:      []string{"ControlPlane.role is", "roleConfig.sha256"},
			sumPinned: true},
		{name: "role's configuration torn", conf: stored, beside: true,
			read: func(_, obj string) string { return obj[:len(obj)/2] },
			want: []string{"content does not match its sha256"}},
		{name: "role's configuration missing", conf: stored, beside: true,
			read: nil, notPresent: true,
			want: []string{"which does not exist", "`kubeup update cluster --yes` writes both"}},
		{name: "no reader", conf: stored, beside: false,
			want: []string{"names its role's configuration ControlPlane.role", "read from beside it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := objects
			if tt.notPresent {
				objs = map[string]string{conf: tt.conf}
			}
			var beside model.ReadBeside
			if tt.beside {
				beside = besideIn(objs, conf, tt.read)
			}
			_, err := model.DecodeNodeConfigObject(conf, []byte(tt.conf), beside)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			var sumErr *model.NodeConfigSumError
			if isSum := errors.As(err, &sumErr) && sumErr.PinnedBy != ""; isSum != tt.sumPinned {
				t.Errorf("a *NodeConfigSumError pinned by the configuration: %t, want %t (%v)", isSum, tt.sumPinned, err)
			}
			if tt.notPresent && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a missing role's configuration: %v does not wrap fs.ErrNotExist", err)
			}
		})
	}
}
