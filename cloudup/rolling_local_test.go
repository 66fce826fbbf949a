package cloudup

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
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

	// A record under an id that is not a plain name (a control character: an older nodeup recorded any
	// --node-id) is refused, quoted: nothing of it reaches the terminal raw.
	evil := "w4\x1b]0;pwned\x07\x1b[2J"
	machine(evil, "nodes", a, "", false)
	_, err = l.Groups(ctx, igs)
	if p := filepath.Join(l.dir, evil+".json"); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q is not a machine record written by nodeup", p)) ||
		!strings.Contains(err.Error(), "a node id is a plain name") || strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Errorf("a record under the id %q: %q, want an error that quotes its path and says what a node id is", evil, err)
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

// TestLocalRollingReplace: replacing a local control-plane machine runs its recorded nodeup with the group's
// configuration from the state store and its root, then waits for two of protokube's rounds (its claims
// renewed twice); when a round under way during nodeup's run wrote the former node.conf back, nodeup runs again.
func TestLocalRollingReplace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		revert   bool // the first round after nodeup's run writes the former node.conf back
		wantRuns int
	}{
		{name: "protokube takes the new configuration", wantRuns: 1},
		{name: "a round writes the former node.conf back", revert: true, wantRuns: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			const cluster = "c.example.com"
			a, b := "# sha256:"+strings.Repeat("a", 64)+"\nformer\n", "# sha256:"+strings.Repeat("b", 64)+"\ncurrent\n"
			store, err := statestore.Open(ctx, "file://"+filepath.Join(dir, "state"))
			if err != nil {
				t.Fatal(err)
			}
			if err := store.WriteFile(ctx, model.NodeConfigPath(cluster, "control-plane-a"), []byte(b)); err != nil {
				t.Fatal(err)
			}
			pool := filepath.Join(dir, "state-local", "volumes")
			c := &model.Cluster{Metadata: model.ObjectMeta{Name: cluster}, Spec: model.ClusterSpec{CloudProvider: model.CloudLocal, Local: &model.LocalSpec{PoolDir: pool}}}
			l, err := openLocalRolling(c, nil, store)
			if err != nil {
				t.Fatal(err)
			}
			l.poll = 10 * time.Millisecond
			root := filepath.Join(dir, "root")
			nodeConf := filepath.Join(root, "etc/kubeup/node.conf")
			writeTestFile(t, nodeConf, a)
			// A stand-in for nodeup: copies the configuration (file://) to the root's node.conf, and counts its runs.
			nodeup := filepath.Join(dir, "nodeup")
			writeTestFile(t, nodeup, `#!/bin/sh
for a; do case $a in --conf=file://*) conf=${a#--conf=file://};; --root=*) root=${a#--root=};; esac; done
cp "$conf" "$root/etc/kubeup/node.conf.tmp" && mv "$root/etc/kubeup/node.conf.tmp" "$root/etc/kubeup/node.conf" && echo "$*" >>"$root/runs"
`)
			if err := os.Chmod(nodeup, 0o755); err != nil {
				t.Fatal(err)
			}
			rec, _ := json.Marshal(localMachine{NodeID: "cp1", Cluster: cluster, InstanceGroup: "control-plane-a", Root: root, Nodeup: nodeup, ConfigSHA256: strings.Repeat("a", 64)})
			writeTestFile(t, filepath.Join(dir, "state-local", "machines", cluster, "cp1.json"), string(rec))
			vol := "a-1.etcd-main." + cluster
			side, _ := json.Marshal(map[string]any{"name": vol, "zone": "a", "sizeGB": 1, "volumeType": "sparse", "tags": map[string]string{
				model.ClusterTagKey(cluster): model.TagValueOwned, model.TagControlPlane: "1", model.EtcdTagKey("main"): "a-1/a-1"}})
			writeTestFile(t, filepath.Join(pool, vol+".json"), string(side))
			renew := func() {
				b, _ := json.Marshal(map[string]any{"nodeID": "cp1", "internalIP": "192.0.2.1", "since": time.Now(), "renewed": time.Now(), "lease": "1m0s"})
				writeTestFile(t, filepath.Join(pool, vol+".claim.tmp"), string(b))
				if err := os.Rename(filepath.Join(pool, vol+".claim.tmp"), filepath.Join(pool, vol+".claim")); err != nil {
					t.Error(err)
				}
			}
			renew()
			// A stand-in for protokube: a round every 20ms renews the claim; with revert, the first round after
			// nodeup's run writes the former node.conf back.
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				reverted := false
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					if _, err := os.Stat(filepath.Join(root, "runs")); tc.revert && !reverted && err == nil {
						reverted = true
						if err := os.WriteFile(nodeConf, []byte(a), 0o600); err != nil {
							t.Error(err)
						}
					}
					renew()
				}
			}()
			err = l.Replace(ctx, RollingInstance{Group: "control-plane-a", ControlPlane: true, ID: "cp1"})
			close(stop)
			<-done
			if err != nil {
				t.Fatal(err)
			}
			runs, _ := os.ReadFile(filepath.Join(root, "runs"))
			wantRun := "--conf=file://" + filepath.Join(dir, "state", cluster, "nodeup", "control-plane-a") + " --root=" + root + " --node-id=cp1\n"
			if diff := cmp.Diff(strings.Repeat(wantRun, tc.wantRuns), string(runs)); diff != "" {
				t.Errorf("nodeup's runs (-want +got):\n%s", diff)
			}
			if got, _ := os.ReadFile(nodeConf); string(got) != b {
				t.Errorf("node.conf after Replace: %q, want the group's", got)
			}
		})
	}
}

// TestLocalRollingEtcd: with --cloudonly, a member is healthy when its volume's claim is held, unexpired, by a
// ready machine of the cluster; the quorum check refuses to take down a machine without which fewer than a
// quorum would be.
func TestLocalRollingEtcd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const cluster = "c.example.com"
	sum := strings.Repeat("a", 64)
	store, err := statestore.Open(ctx, "file://"+filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	pool := filepath.Join(dir, "state-local", "volumes")
	c := &model.Cluster{Metadata: model.ObjectMeta{Name: cluster}, Spec: model.ClusterSpec{
		CloudProvider: model.CloudLocal, Local: &model.LocalSpec{PoolDir: pool},
		EtcdClusters: []model.EtcdClusterSpec{{Name: "main", Members: []model.EtcdMemberSpec{{Name: "a-1"}, {Name: "a-2"}, {Name: "a-3"}}}},
	}}
	var igs []*model.InstanceGroup
	for k, id := range []string{"cp1", "cp2", "cp3"} {
		g := "control-plane-a-" + strconv.Itoa(k+1)
		igs = append(igs, &model.InstanceGroup{Metadata: model.ObjectMeta{Name: g}, Spec: model.InstanceGroupSpec{Role: model.RoleControlPlane}})
		if err := store.WriteFile(ctx, model.NodeConfigPath(cluster, g), []byte("# sha256:"+sum+"\n")); err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(dir, "roots", id)
		if id != "cp2" { // cp2's root is gone: not ready
			writeTestFile(t, filepath.Join(root, "etc/kubeup/node.conf"), "# sha256:"+sum+"\n")
		}
		rec, _ := json.Marshal(localMachine{NodeID: id, Cluster: cluster, InstanceGroup: g, Root: root, ConfigSHA256: sum})
		writeTestFile(t, filepath.Join(dir, "state-local", "machines", cluster, id+".json"), string(rec))
	}
	for k, holder := range []string{"cp1", "cp2", "cp3"} {
		m := "a-" + strconv.Itoa(k+1)
		vol := m + ".etcd-main." + cluster
		side, _ := json.Marshal(map[string]any{"name": vol, "zone": "a", "sizeGB": 1, "volumeType": "sparse", "tags": map[string]string{
			model.ClusterTagKey(cluster): model.TagValueOwned, model.TagControlPlane: "1", model.EtcdTagKey("main"): m + "/a-1,a-2,a-3"}})
		writeTestFile(t, filepath.Join(pool, vol+".json"), string(side))
		renewed := time.Now()
		if holder == "cp3" {
			renewed = renewed.Add(-time.Hour) // cp3's lease ran out: its protokube stopped renewing
		}
		claim, _ := json.Marshal(map[string]any{"nodeID": holder, "internalIP": "192.0.2." + strconv.Itoa(k+1), "since": renewed, "renewed": renewed, "lease": "1m0s"})
		writeTestFile(t, filepath.Join(pool, vol+".claim"), string(claim))
	}
	l, err := openLocalRolling(c, igs, store)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Etcd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []MemberHealth{
		{EtcdCluster: "main", Member: "a-1", Holder: "cp1", Healthy: true},
		{EtcdCluster: "main", Member: "a-2", Holder: "cp2", Why: "its volume a-2.etcd-main.c.example.com is claimed by cp2, which is not a ready machine of the cluster"},
		{EtcdCluster: "main", Member: "a-3", Why: "its volume a-3.etcd-main.c.example.com is claimed by no node (or its claim's lease ran out)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Etcd (-want +got):\n%s", diff)
	}
	groups, err := l.Groups(ctx, igs[:1])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"192.0.2.1"}, groups[0].Instances[0].Addresses); diff != "" {
		t.Errorf("cp1's addresses, from its claims (-want +got):\n%s", diff)
	}
	r := &roller{cloud: l, health: l, igs: igs, o: RollingOptions{Logger: slog.New(slog.DiscardHandler)}}
	if err := r.quorum(ctx, groups[0].Instances[0], r.o.Logger); err == nil || !strings.Contains(err.Error(), "etcd would lose its quorum") {
		t.Errorf("taking cp1 down with a-2 and a-3 unhealthy: %v", err)
	}
	problems, err := l.Validate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{
		"instance cp2 (instance group control-plane-a-2): not ready",
		"instance group control-plane-a-2: 0 of its 1 machines ready",
		"etcd member main/a-2: its volume a-2.etcd-main.c.example.com is claimed by cp2, which is not a ready machine of the cluster",
		"etcd member main/a-3: its volume a-3.etcd-main.c.example.com is claimed by no node (or its claim's lease ran out)",
	}, problems); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
}
