package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/model"
)

// planShows runs the dry run of update and checks that it names every one of want, and none of dontWant.
func planShows(t *testing.T, state, name string, want, dontWant []string) {
	t.Helper()
	plan := mustKubeup(t, state, "update", "cluster", name)
	for _, w := range want {
		if !strings.Contains(plan, w) {
			t.Errorf("the dry run lacks %q:\n%s", w, plan)
		}
	}
	for _, w := range dontWant {
		if strings.Contains(plan, w) {
			t.Errorf("the dry run shows %q:\n%s", w, plan)
		}
	}
}

// converge runs update --yes, then checks that a dry run has nothing left to do.
func converge(t *testing.T, state, name string) {
	t.Helper()
	if out := mustKubeup(t, state, "update", "cluster", name, "--yes"); !strings.Contains(out, "Cluster is up to date") {
		t.Errorf("update --yes printed:\n%s", out)
	}
	if out := mustKubeup(t, state, "update", "cluster", name); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("the dry run after update --yes printed:\n%s", out)
	}
}

// TestInstanceGroupLifecycle is the acceptance on the local provider: create a cluster, add an instance
// group with `create instancegroup`, edit its size, delete it; each step previewed by `update cluster` (its dry
// run shows the group's change) and converged by `update --yes` (after which a dry run shows nothing).
func TestInstanceGroupLifecycle(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a,b,c")
	converge(t, state, name)

	// Add.
	out := mustKubeup(t, state, "create", "instancegroup", "gpu", "--name", name, "--role", "Node", "--zones", "a,b", "--min", "2", "--max", "3")
	if !strings.Contains(out, "Created instance group gpu in cluster demo.example.com (3 instance groups).") {
		t.Errorf("create instancegroup printed:\n%s", out)
	}
	table := mustKubeup(t, state, "get", "instancegroups", "--name", name)
	if !strings.Contains(table, "NAME             ROLE          MACHINETYPE  MIN  MAX  ZONES\n") ||
		!strings.Contains(table, "\ngpu              Node          local        2    3    a,b\n") ||
		!strings.Contains(table, "\nnodes            Node          local        1    1    a,b,c\n") {
		t.Errorf("get instancegroups printed:\n%s", table)
	}
	planShows(t, state, name, []string{
		"instanceGroups[gpu].spec.minSize: <none> -> 2",
		"instanceGroups[gpu].spec.maxSize: <none> -> 3",
		"instanceGroups[gpu].spec.zones[1]: <none> -> b",
		"Will create resources:\n  StoreFile/demo.example.com/nodeup/gpu\n",
	}, nil)
	converge(t, state, name)
	if _, err := os.Stat(filepath.Join(state, name, "nodeup", "gpu")); err != nil {
		t.Errorf("the new group's node configuration: %v", err)
	}

	// Edit its size.
	t.Setenv("KUBE_EDITOR", `sed -i -e "s/maxSize: 3/maxSize: 5/"`)
	out = mustKubeup(t, state, "edit", "instancegroup", "gpu", "--name", name)
	if !strings.Contains(out, "Updated instance group gpu of cluster demo.example.com. Review the changes: kubeup update cluster demo.example.com") {
		t.Errorf("edit instancegroup printed:\n%s", out)
	}
	// A size is the cloud's (an Auto Scaling group's, a managed instance group's): the nodes' configuration does
	// not change, so no machine is to be replaced for it.
	planShows(t, state, name, []string{
		"Spec changes:\n  instanceGroups[gpu].spec.maxSize: 3 -> 5\nWill modify resources:\n",
		"  StoreFile/demo.example.com/cluster-completed.spec\n",
	}, []string{"Will create", "Will delete", "nodeup/gpu"})
	converge(t, state, name)

	// Delete it: the dry run changes nothing, --yes takes it out of the spec.
	before := treeSums(t, base)
	out = mustKubeup(t, state, "delete", "instancegroup", "gpu", "--name", name)
	if want := "Will delete instance group gpu (role Node, zones a,b, size 2-5) from the spec of cluster demo.example.com.\n\nMust specify --yes to delete it.\n"; out != want {
		t.Errorf("delete instancegroup printed:\n%s\nwant:\n%s", out, want)
	}
	if !sameSums(before, treeSums(t, base)) {
		t.Error("delete instancegroup without --yes changed the store")
	}
	out, stderr, err := kubeup(t, state, "delete", "instancegroup", "gpu", "--name", name, "--yes")
	if err != nil {
		t.Fatalf("delete instancegroup --yes: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "Deleted instance group gpu (role Node, zones a,b, size 2-5) from the spec of cluster demo.example.com.") {
		t.Errorf("delete instancegroup --yes printed:\n%s", out)
	}
	if strings.Contains(stderr, "Warning") {
		t.Errorf("delete instancegroup --yes warned (update --yes deletes what the group leaves):\n%s", stderr)
	}
	// The update deletes the group's node configuration, and the dry run names it as a deletion.
	planShows(t, state, name, []string{
		"instanceGroups[gpu].metadata.name: gpu -> <none>",
		"instanceGroups[gpu].spec.maxSize: 5 -> <none>",
		"Will delete resources:\n  StoreFile/demo.example.com/nodeup/gpu (instance group gpu is no longer in the spec)\n",
	}, []string{"StoreStaleObjects"})
	converge(t, state, name)
	if _, err := os.Stat(filepath.Join(state, name, "nodeup", "gpu")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted group's node configuration after update --yes: %v, want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(state, name, "nodeup", "nodes")); err != nil {
		t.Errorf("the nodes group's node configuration after update --yes: %v", err)
	}
	if table := mustKubeup(t, state, "get", "ig", "--name", name); strings.Contains(table, "gpu") {
		t.Errorf("get instancegroups after the delete:\n%s", table)
	}
}

// TestInstanceGroupFiles: get instancegroups prints groups that name their cluster, and replace -f and create
// -f take files of InstanceGroups alone (and a whole cluster); the label is not stored.
func TestInstanceGroupFiles(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a,b")
	write := func(file, text string) string {
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	nodes := mustKubeup(t, state, "get", "ig", "nodes", "--name", name, "-o", "yaml")
	if !strings.Contains(nodes, "  labels:\n    kubeup.dev/cluster: demo.example.com\n") || !strings.Contains(nodes, "resourceVersion: ") {
		t.Fatalf("get ig nodes -o yaml does not name the cluster and the version:\n%s", nodes)
	}
	var one model.InstanceGroup
	if err := json.Unmarshal([]byte(mustKubeup(t, state, "get", "ig", "nodes", "--name", name, "-o", "json")), &one); err != nil || one.Metadata.Name != "nodes" {
		t.Errorf("get ig nodes -o json: %v, %q; want the group as one object", err, one.Metadata.Name)
	}
	// The older form, the cluster as NAME, still lists the groups.
	if out := mustKubeup(t, state, "get", "instancegroups", name); !strings.Contains(out, "control-plane-a") || !strings.Contains(out, "nodes") {
		t.Errorf("get instancegroups CLUSTER printed:\n%s", out)
	}

	out := mustKubeup(t, state, "replace", "-f", write("nodes.yaml", strings.Replace(nodes, "maxSize: 1", "maxSize: 4", 1)))
	if !strings.Contains(out, "Replaced instance groups of cluster demo.example.com: nodes.\n") {
		t.Errorf("replace -f of a group printed:\n%s", out)
	}
	if out := mustKubeup(t, state, "get", "ig", "--name", name); !strings.Contains(out, "\nnodes            Node          local        1    4    a,b\n") {
		t.Errorf("after the replace:\n%s", out)
	}
	// The group without its cluster: --name says which.
	bare := "apiVersion: kubeup.dev/v1alpha1\nkind: InstanceGroup\nmetadata:\n  name: batch\nspec:\n  role: Node\n  zones: [b]\n"
	out = mustKubeup(t, state, "create", "-f", write("batch.yaml", bare), "--name", name)
	if !strings.Contains(out, "Created instance groups batch in cluster demo.example.com.") {
		t.Errorf("create -f of a group printed:\n%s", out)
	}
	stored, err := os.ReadFile(filepath.Join(state, name, "config"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), model.LabelCluster) || strings.Contains(string(stored), "resourceVersion") {
		t.Errorf("the stored spec holds what is never stored:\n%s", stored)
	}

	// create instancegroup --dry-run prints the group, labelled with its cluster, and writes nothing.
	before := treeSums(t, state)
	dry := mustKubeup(t, state, "create", "ig", "spare", "--name", name, "--role", "node", "--zones", "a", "--max", "3", "--dry-run", "-o", "yaml")
	if want := "apiVersion: kubeup.dev/v1alpha1\nkind: InstanceGroup\nmetadata:\n  labels:\n    kubeup.dev/cluster: demo.example.com\n  name: spare\nspec:\n" +
		"  maxSize: 3\n  role: Node\n  zones:\n  - a\n"; dry != want {
		t.Errorf("create ig --dry-run printed:\n%s\nwant:\n%s", dry, want)
	}
	if !sameSums(before, treeSums(t, state)) {
		t.Error("create ig --dry-run changed the store")
	}

	for _, args := range [][]string{{"__complete", "get", "ig", "--name", name, ""}, {"__complete", "edit", "ig", "--name", name, "n"}, {"__complete", "delete", "ig", "--name", name, ""}} {
		if out := mustKubeup(t, state, args...); !strings.Contains(out, "\nnodes\n") || !strings.Contains(out, "control-plane-a\n") || !strings.Contains(out, ":4\n") {
			t.Errorf("kubeup %s completes to\n%s\nwant the cluster's groups, and no files", strings.Join(args, " "), out)
		}
	}

	// A whole cluster from a file: the Cluster and its groups, as get prints them.
	whole := strings.ReplaceAll(mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")+"---\n"+mustKubeup(t, state, "get", "ig", "--name", name, "-o", "yaml"),
		name, "copy.example.com")
	out = mustKubeup(t, state, "create", "-f", write("copy.yaml", whole))
	if !strings.Contains(out, "Created cluster copy.example.com in file://"+state+" with 3 instance groups.") {
		t.Errorf("create -f of a cluster printed:\n%s", out)
	}
}

// TestInstanceGroupRefusals: every refusal of the instance group commands names what is wrong (the document,
// the field path) and how to fix it, and changes nothing in the store.
func TestInstanceGroupRefusals(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a,b,c", "--control-plane-count", "3")
	mustKubeup(t, state, "create", "cluster", "other.example.com", "--cloud", "local", "--zones", "a")
	converge(t, state, name)
	write := func(file, text string) string {
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	group := func(name, labels, spec string) string {
		return "apiVersion: kubeup.dev/v1alpha1\nkind: InstanceGroup\nmetadata:\n  name: " + name + "\n" + labels + "spec:\n" + spec
	}
	ours := "  labels:\n    kubeup.dev/cluster: demo.example.com\n"
	sedEditor := func(expr string) string { return `sed -i -e "` + expr + `"` }

	tests := []struct {
		name   string
		editor string // KUBE_EDITOR, for edit
		args   []string
		want   []string // in the error
	}{
		{name: "create: a name the cluster has", args: []string{"create", "ig", "nodes", "--name", name},
			want: []string{`create instancegroup nodes: instance group "nodes" already exists in cluster demo.example.com: nothing was written; change it with ` +
				"`kubeup edit instancegroup nodes --name demo.example.com`"}},
		{name: "create: a zone the cluster does not have", args: []string{"create", "ig", "x", "--name", name, "--zones", "a,z"},
			want: []string{`create instancegroup x: instancegroup/x: spec.zones[1]: "z" is not one of the cluster's spec.zones [a b c]`}},
		{name: "create: sizes the wrong way round", args: []string{"create", "ig", "x", "--name", name, "--min", "3", "--max", "2"},
			want: []string{"instancegroup/x: spec.maxSize: 2 is smaller than spec.minSize 3"}},
		{name: "create: not a name", args: []string{"create", "ig", "Big_Nodes", "--name", name},
			want: []string{`"Big_Nodes" is not a valid instance group name: lowercase letters, digits and '-', at most 63`}},
		{name: "create: an unknown role", args: []string{"create", "ig", "x", "--name", name, "--role", "worker"},
			want: []string{`--role "worker": want Node or ControlPlane`}},
		{name: "create: without the cluster", args: []string{"create", "ig", "x"},
			want: []string{"kubeup create instancegroup needs the instance group's cluster: kubeup create instancegroup x --name CLUSTER"}},
		{name: "create: two names", args: []string{"create", "ig", "x", "y", "--name", name},
			want: []string{"kubeup create instancegroup takes one instance group NAME, got 2 arguments (\"x\" \"y\")"}},
		{name: "create: a control plane that would add etcd members to an applied cluster", args: []string{"create", "ig", "control-plane-d", "--name", name, "--role", "ControlPlane", "--zones", "a"},
			want: []string{"would add member d of etcd main (instance group control-plane-d), member d of etcd events (instance group control-plane-d)",
				"kubeup does not change the membership of a running etcd cluster", "nothing was written"}},
		{name: "delete: a group the cluster does not have", args: []string{"delete", "ig", "gpu", "--name", name, "--yes"},
			want: []string{`cluster demo.example.com has no instance group "gpu": it has control-plane-a, control-plane-b, control-plane-c, nodes`}},
		{name: "delete: a group that runs etcd members, dry run", args: []string{"delete", "ig", "control-plane-b", "--name", name},
			want: []string{"instance group control-plane-b of cluster demo.example.com runs etcd members, and deleting it would take them down: " +
				"member b of etcd cluster main (3 members, quorum 2): 2 members would be left to keep the quorum of 2, so it would survive 0 more failures instead of 1; " +
				"member b of etcd cluster events (3 members, quorum 2)", "Nothing was written"}},
		{name: "delete: a group that runs etcd members, --yes", args: []string{"delete", "ig", "control-plane-b", "--name", name, "--yes"},
			want: []string{"runs etcd members", "kubeup does not remove members from a running etcd cluster"}},
		{name: "delete: the only control plane of a cluster", args: []string{"delete", "ig", "control-plane-a", "--name", "other.example.com", "--yes"},
			want: []string{"member a of etcd cluster main (1 members, quorum 1): its only member, so the cluster's API stops"}},
		{name: "edit: an invalid size", editor: sedEditor("s/maxSize: 1/maxSize: -1/"), args: []string{"edit", "ig", "nodes", "--name", name},
			want: []string{"instancegroup/nodes: spec.maxSize: -1 is smaller than spec.minSize 1", "the cluster was not changed; your edit is kept in ", "fix it and run `kubeup replace -f "}},
		{name: "edit: a rename", editor: sedEditor("s/name: nodes/name: workers/"), args: []string{"edit", "ig", "nodes", "--name", name},
			want: []string{`metadata.name: "workers": an instance group cannot be renamed`, `set it back to "nodes"`}},
		{name: "edit: a move to another cluster", editor: sedEditor("s/cluster: demo.example.com/cluster: other.example.com/"), args: []string{"edit", "ig", "nodes", "--name", name},
			want: []string{`metadata.labels[kubeup.dev/cluster]: "other.example.com": the group is in cluster "demo.example.com" and cannot move to another`}},
		{name: "edit: a node group turned control plane", editor: sedEditor("s/role: Node/role: ControlPlane/"), args: []string{"edit", "ig", "nodes", "--name", name},
			want: []string{"would add member nodes of etcd main (instance group nodes)", "kubeup does not change the membership of a running etcd cluster"}},
		{name: "edit: a misspelt field", editor: sedEditor("s/maxSize:/maxsize:/"), args: []string{"edit", "ig", "nodes", "--name", name},
			want: []string{`spec.maxsize: unknown field: did you mean "maxSize"?`}},
		{name: "edit: a group the cluster does not have", args: []string{"edit", "ig", "gpu", "--name", name},
			want: []string{`cluster demo.example.com has no instance group "gpu"`}},
		{name: "replace: groups that do not name their cluster", args: []string{"replace", "-f", write("bare.yaml", group("nodes", "", "  role: Node\n"))},
			want: []string{"bare.yaml holds instance groups that do not name their cluster: add metadata.labels[kubeup.dev/cluster]: CLUSTER to them", "or name the cluster with --name CLUSTER"}},
		{name: "replace: groups of another cluster than --name", args: []string{"replace", "-f", write("ours.yaml", group("nodes", ours, "  role: Node\n")), "--name", "other.example.com"},
			want: []string{`ours.yaml holds cluster "demo.example.com", not "other.example.com": nothing was written`}},
		{name: "replace: groups of two clusters", args: []string{"replace", "-f", write("two.yaml", group("nodes", ours, "  role: Node\n")+"---\n"+
			group("more", "  labels:\n    kubeup.dev/cluster: other.example.com\n", "  role: Node\n"))},
			want: []string{`two.yaml: document 2 (line 10): metadata.labels[kubeup.dev/cluster]: "other.example.com" is not "demo.example.com", the cluster of InstanceGroup "nodes"`}},
		{name: "replace: one invalid group of two", args: []string{"replace", "-f", write("mixed.yaml", group("nodes", ours, "  role: Node\n  maxSize: 3\n")+"---\n"+
			group("more", ours, "  role: Node\n  zones: [q]\n"))},
			want: []string{`mixed.yaml: instancegroup/more: spec.zones[0]: "q" is not one of the cluster's spec.zones [a b c]`}},
		{name: "replace: a document that does not decode", args: []string{"replace", "-f", write("typo.yaml", group("nodes", ours, "  role: Node\n")+"---\n"+
			group("more", ours, "  role: Node\n  minsize: 2\n"))},
			want: []string{`typo.yaml: document 2 (line 10): spec.minsize: unknown field: did you mean "minSize"?`}},
		{name: "replace: a control plane that would add etcd members", args: []string{"replace", "-f", write("cp.yaml", group("control-plane-d", ours, "  role: ControlPlane\n  zones: [a]\n"))},
			want: []string{"cp.yaml: this change of cluster demo.example.com would add member d of etcd main"}},
		{name: "replace: the Cluster with a control plane that would add etcd members", args: []string{"replace", "-f", write("whole.yaml",
			mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")+"---\n"+group("control-plane-d", ours, "  role: ControlPlane\n  zones: [a]\n"))},
			want: []string{"whole.yaml: this change of cluster demo.example.com would add member d of etcd main (instance group control-plane-d)",
				"kubeup does not change the membership of a running etcd cluster", "nothing was written", "cluster-completed.spec holds that spec"}},
		{name: "replace: the Cluster with a control plane turned into nodes", args: []string{"replace", "-f", write("fewer.yaml",
			mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")+"---\n"+group("control-plane-c", ours, "  role: Node\n  zones: [c]\n"))},
			want: []string{"would remove member c of etcd main (instance group control-plane-c)", "nothing was written"}},
		{name: "replace: a label that is not a cluster name", args: []string{"replace", "-f", write("label.yaml", group("nodes", "  labels:\n    kubeup.dev/cluster: Demo\n", "  role: Node\n"))},
			want: []string{`label.yaml: metadata.labels[kubeup.dev/cluster] (or the Cluster's metadata.name): "Demo" is not a cluster name`}},
		{name: "create -f: a group the cluster has", args: []string{"create", "-f", write("again.yaml", group("nodes", ours, "  role: Node\n"))},
			want: []string{`again.yaml: instance group "nodes" already exists in cluster demo.example.com`}},
		{name: "create -f: a cluster that exists", args: []string{"create", "-f", write("cluster.yaml", "apiVersion: kubeup.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: demo.example.com\nspec:\n  cloudProvider: local\n  zones: [a]\n---\n"+
			group("control-plane-a", "", "  role: ControlPlane\n  zones: [a]\n"))},
			want: []string{`cluster "demo.example.com" already exists`}},
		{name: "create -f: an invalid group among valid ones", args: []string{"create", "-f", write("some.yaml", group("ok", ours, "  role: Node\n")+"---\n"+
			group("bad", ours, "  role: Node\n  minSize: -2\n"))},
			want: []string{"some.yaml: instancegroup/bad: spec.minSize: -2: must not be negative"}},
		{name: "create: neither a subcommand nor a file", args: []string{"create"},
			want: []string{"kubeup create needs a subcommand: cluster or instancegroup (see `kubeup create --help`), or -f FILE"}},
		{name: "get: a group the cluster does not have", args: []string{"get", "ig", "gpu", "--name", name},
			want: []string{`cluster demo.example.com has no instance group "gpu": it has control-plane-a, control-plane-b, control-plane-c, nodes`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			editor := tt.editor
			if editor == "" {
				editor = "true"
			}
			t.Setenv("KUBE_EDITOR", editor)
			before := treeSums(t, state)
			_, _, err := kubeup(t, state, tt.args...)
			if err == nil {
				t.Fatalf("kubeup %s succeeded, want it refused", strings.Join(tt.args, " "))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("kubeup %s: error lacks %q:\n%v", strings.Join(tt.args, " "), w, err)
				}
			}
			if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
				t.Errorf("a refused kubeup %s changed the store (-before +after):\n%s", strings.Join(tt.args, " "), diff)
			}
			if _, kept, ok := strings.Cut(err.Error(), "your edit is kept in "); ok {
				os.Remove(strings.Fields(kept)[0])
			}
		})
	}
}

// TestUpdateRefusesOtherEtcdMembers: a spec whose etcd members are not those the cluster was applied with (here
// written into the store by hand, past every command's check) is refused by update cluster, dry run and --yes,
// before anything is made for the new members.
func TestUpdateRefusesOtherEtcdMembers(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	converge(t, state, name)
	spec := filepath.Join(state, name, "config")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	more := "---\napiVersion: kubeup.dev/v1alpha1\nkind: InstanceGroup\nmetadata:\n  name: control-plane-%s\nspec:\n  role: ControlPlane\n  zones: [a]\n"
	data = append(data, fmt.Sprintf(more, "b")+fmt.Sprintf(more, "c")...)
	if err := os.WriteFile(spec, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeSums(t, state)
	for _, args := range [][]string{{"update", "cluster", name}, {"update", "cluster", name, "--yes"}} {
		_, _, err := kubeup(t, state, args...)
		if err == nil {
			t.Fatalf("kubeup %s succeeded with two etcd members the cluster was not applied with", strings.Join(args, " "))
		}
		for _, w := range []string{"the spec of cluster demo.example.com in file://" + spec,
			"would add member b of etcd main (instance group control-plane-b), member c of etcd main (instance group control-plane-c)",
			"kubeup does not change the membership of a running etcd cluster"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("kubeup %s: error lacks %q:\n%v", strings.Join(args, " "), w, err)
			}
		}
		if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
			t.Errorf("a refused kubeup %s changed the store (-before +after):\n%s", strings.Join(args, " "), diff)
		}
	}
}

// TestDeleteInstanceGroupOnAWS: on aws, delete instancegroup --yes warns of nothing left behind: update --yes
// deletes the group's Auto Scaling group and launch template (test/aws TestDeletedGroupIsPlannedAsDeletions).
func TestDeleteInstanceGroupOnAWS(t *testing.T) {
	state := s3State(t)
	withState := func(args ...string) []string { return append([]string{"--state", state}, args...) }
	mustKubeup(t, "", withState(awsCreate("--nodeup-url", testNodeupURL, "--nodeup-sha256", testNodeupSHA256)...)...)
	mustKubeup(t, "", withState("create", "ig", "batch", "--name", "aws.example.com", "--zones", "us-east-1b", "--machine-type", "m5.large")...)
	out, stderr, err := kubeup(t, "", withState("delete", "ig", "batch", "--name", "aws.example.com", "--yes")...)
	if err != nil || !strings.Contains(out, "Deleted instance group batch (role Node, zones us-east-1b, size 1-1)") ||
		strings.Contains(stderr, "Warning") {
		t.Errorf("delete ig --yes on aws: %v, printed\n%s\nand on stderr\n%s", err, out, stderr)
	}
}

// TestAddAWholeEtcdCluster: an etcd cluster added whole to an applied cluster (its members all new: they start
// a cluster of their own) is not a change of a running etcd cluster's members: replace and update take it.
func TestAddAWholeEtcdCluster(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a", "--control-plane-count", "3")
	converge(t, state, name)
	spec := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
	etcd := "  etcdClusters:\n"
	for _, e := range []string{"main", "events", "cilium"} {
		etcd += "  - name: " + e + "\n    members:\n"
		for _, i := range []string{"1", "2", "3"} {
			etcd += "    - {name: a-" + i + ", instanceGroup: control-plane-a-" + i + "}\n"
		}
	}
	file := filepath.Join(dir, "cilium.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(spec, "spec:\n", "spec:\n"+etcd, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubeup(t, state, "replace", "-f", file)
	if out := mustKubeup(t, state, "update", "cluster", name); !strings.Contains(out, "a-1.etcd-cilium") {
		t.Errorf("the dry run shows no volume of the new etcd cluster:\n%s", out)
	}
}
