package cloudup

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

// TestLocalRollingGroups: a local machine needs an update when the configuration it runs (the record nodeup
// wrote; on the control plane the sha256 in its /etc/kubeup/node.conf, which protokube reads) is not its
// group's in the state store; a control-plane machine whose node.conf is not what nodeup converged it to is not
// Ready; a machine whose root is gone needs an update.
func TestLocalRollingGroups(t *testing.T) {
	ctx := context.Background()
	sum := func(c byte) string { return strings.Repeat(string(c), 64) }
	a, b := sum('a'), sum('b')
	dir := t.TempDir()
	store, err := statestore.Open(ctx, "file://"+filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	const cluster = "local.example.com"
	current := map[string]string{"control-plane-a": b, "nodes": a}
	for g, s := range current {
		if err := store.WriteFile(ctx, model.NodeConfigPath(cluster, g), []byte("# sha256:"+s+"\napiVersion: kubeup.dev/v1alpha1\n")); err != nil {
			t.Fatal(err)
		}
	}
	c := &model.Cluster{Metadata: model.ObjectMeta{Name: cluster}, Spec: model.ClusterSpec{
		CloudProvider: model.CloudLocal, Local: &model.LocalSpec{PoolDir: filepath.Join(dir, "state-local", "volumes")},
	}}
	one, three := int32(1), int32(3)
	igs := []*model.InstanceGroup{
		{Metadata: model.ObjectMeta{Name: "control-plane-a"}, Spec: model.InstanceGroupSpec{Role: model.RoleControlPlane, MinSize: &three, MaxSize: &three}},
		{Metadata: model.ObjectMeta{Name: "nodes"}, Spec: model.InstanceGroupSpec{Role: model.RoleNode, MinSize: &one, MaxSize: &three}},
	}
	l, err := openLocalRolling(c, igs, store)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	machine := func(id, group, converged, nodeConf string, rootGone bool) {
		root := filepath.Join(dir, "roots", id)
		if !rootGone {
			if nodeConf != "" {
				writeTestFile(t, filepath.Join(root, "etc/kubeup/node.conf"), "# sha256:"+nodeConf+"\nkind: NodeConfig\n")
			}
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		rec, _ := json.Marshal(localMachine{NodeID: id, Cluster: cluster, InstanceGroup: group, Zone: "a", Root: root,
			Nodeup: "/usr/local/bin/nodeup", ConfigSHA256: converged, Converged: at})
		writeTestFile(t, filepath.Join(dir, "state-local", "machines", cluster, id+".json"), string(rec))
	}
	machine("cp1", "control-plane-a", b, b, false)                                                  // up to date
	machine("cp2", "control-plane-a", a, a, false)                                                  // converged to the former configuration
	machine("cp3", "control-plane-a", b, a, false)                                                  // nodeup converged it, but node.conf says otherwise
	machine("w1", "nodes", a, "", false)                                                            // a node has no node.conf: the record says
	machine("w2", "nodes", a, "", true)                                                             // its root is gone
	writeTestFile(t, filepath.Join(dir, "state-local", "machines", cluster, ".w3.json.tmp-1"), "{") // nodeup's temporary file

	got, err := l.Groups(ctx, igs)
	if err != nil {
		t.Fatal(err)
	}
	want := []RollingGroup{
		{Name: "control-plane-a", ControlPlane: true, Min: 3, Target: 3, Max: 3, Instances: []RollingInstance{
			{Group: "control-plane-a", ControlPlane: true, ID: "cp1", Zone: "a", Ready: true, UID: b + "@2026-11-23T20:00:00Z"},
			{Group: "control-plane-a", ControlPlane: true, ID: "cp2", Zone: "a", Ready: true, UID: a + "@2026-11-23T20:00:00Z", NeedsUpdate: true,
				Reason: "node configuration aaaaaaaaaaaa (converged by nodeup at 2026-11-23T20:00:00Z), the group's is bbbbbbbbbbbb"},
			{Group: "control-plane-a", ControlPlane: true, ID: "cp3", Zone: "a", UID: a + "@2026-11-23T20:00:00Z", NeedsUpdate: true,
				Reason: "node configuration aaaaaaaaaaaa (in its /etc/kubeup/node.conf, not the bbbbbbbbbbbb nodeup converged it to), the group's is bbbbbbbbbbbb"},
		}},
		{Name: "nodes", Min: 1, Target: 2, Max: 3, Instances: []RollingInstance{
			{Group: "nodes", ID: "w1", Zone: "a", Ready: true, UID: a + "@2026-11-23T20:00:00Z"},
			{Group: "nodes", ID: "w2", Zone: "a", UID: a + "@2026-11-23T20:00:00Z", NeedsUpdate: true,
				Reason: "its root " + filepath.Join(dir, "roots", "w2") + " is gone (" + filepath.Join(l.dir, "w2.json") + "): remove it from " + l.dir + " if the machine is gone for good"},
		}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(RollingInstance{})); diff != "" {
		t.Errorf("Groups (-want +got):\n%s", diff)
	}

	// With every machine's configuration current, nothing is to be replaced.
	current["control-plane-a"] = a
	if err := store.WriteFile(ctx, model.NodeConfigPath(cluster, "control-plane-a"), []byte("# sha256:"+a+"\n")); err != nil {
		t.Fatal(err)
	}
	got, err = l.Groups(ctx, igs[:1])
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, i := range toReplace(got, false) {
		ids = append(ids, i.ID)
	}
	if diff := cmp.Diff([]string{"cp1"}, ids); diff != "" {
		t.Errorf("to replace once control-plane-a's configuration is aaaa (-want +got):\n%s", diff)
	}

	// A group without a configuration in the store: update --yes first.
	if _, err := l.Groups(ctx, []*model.InstanceGroup{{Metadata: model.ObjectMeta{Name: "gpu"}, Spec: model.InstanceGroupSpec{Role: model.RoleNode}}}); err == nil ||
		!strings.Contains(err.Error(), "run `kubeup update cluster "+cluster+" --yes` first") {
		t.Errorf("a group without a node configuration: %v", err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
