package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestReplaceComparesTheObjectsOfTheFile: resourceVersion is each object's. Replacing twice with the same file
// succeeds, the second time saying nothing changed (the whole spec's version used to refuse it: "changed by
// someone else"); a group read before someone edited another group replaces; a group read before someone
// changed that group is refused, naming it, its field path and the fix, and nothing is written.
func TestReplaceComparesTheObjectsOfTheFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a,b")
	mustKubeup(t, state, "create", "ig", "batch", "--name", name, "--max", "1")
	write := func(file, text string) string {
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// The same file twice.
	spec := write("demo.yaml", strings.Replace(mustKubeup(t, state, "get", "cluster", name, "-o", "yaml"),
		"  cloudProvider: local\n", "  cloudProvider: local\n  dnsZone: example.com\n", 1))
	if out := mustKubeup(t, state, "replace", "-f", spec); !strings.Contains(out, "Replaced the spec of cluster "+name) {
		t.Errorf("the first replace printed:\n%s", out)
	}
	before := treeSums(t, state)
	if out := mustKubeup(t, state, "replace", "-f", spec); out != "No change: cluster "+name+" already holds what "+spec+" holds; nothing was written.\n" {
		t.Errorf("the second replace with the same file printed:\n%s", out)
	}
	if !sameSums(before, treeSums(t, state)) {
		t.Error("the second replace with the same file changed the store")
	}

	// A group read before someone edited another group.
	nodes := mustKubeup(t, state, "get", "ig", "nodes", "--name", name, "-o", "yaml")
	t.Setenv("KUBE_EDITOR", `sed -i 's/^  maxSize: 1$/  maxSize: 2/'`)
	mustKubeup(t, state, "edit", "ig", "batch", "--name", name)
	if out := mustKubeup(t, state, "replace", "-f", write("nodes.yaml", strings.Replace(nodes, "maxSize: 1", "maxSize: 4", 1))); !strings.Contains(out, "Replaced instance groups of cluster "+name+": nodes.") {
		t.Errorf("replace of a group read before another group's edit printed:\n%s", out)
	}
	table := mustKubeup(t, state, "get", "ig", "--name", name)
	for _, want := range []string{"\nbatch            Node          local        1    2    a,b\n", "\nnodes            Node          local        1    4    a,b\n"} {
		if !strings.Contains(table, want) {
			t.Errorf("after the edit of batch and the replace of nodes, no %q:\n%s", want, table)
		}
	}

	// A group read before someone changed that group.
	nodes = mustKubeup(t, state, "get", "ig", "nodes", "--name", name, "-o", "yaml")
	t.Setenv("KUBE_EDITOR", `sed -i 's/^  maxSize: 4$/  maxSize: 6/'`)
	mustKubeup(t, state, "edit", "ig", "nodes", "--name", name)
	before = treeSums(t, state)
	stale := write("stale.yaml", strings.Replace(nodes, "maxSize: 4", "maxSize: 5", 1))
	_, _, err := kubeup(t, state, "replace", "-f", stale)
	for _, want := range []string{
		"instance group nodes of cluster demo.example.com was changed by someone else since " + stale + " was read",
		"differ at spec.maxSize", "nothing was written", "`kubeup get ig nodes --name demo.example.com -o yaml`", "re-apply your change", "--force",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("replace of a group changed since it was read: %v, want it refused with %q", err, want)
		}
	}
	if !sameSums(before, treeSums(t, state)) {
		t.Error("the refused replace changed the store")
	}
}

// TestParallelCreateInstanceGroups: 8 `kubeup create instancegroup` of 8 different groups at once all succeed:
// each that finds the spec written by another between its read and its write reads it again and adds its group
// to theirs. 7 of them were refused when the whole spec had one version.
func TestParallelCreateInstanceGroups(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	const groups = 8
	errs := parallel(groups, func(i int) error {
		_, stderr, err := kubeup(t, state, "create", "ig", fmt.Sprintf("pool%d", i), "--name", name, "--max", fmt.Sprint(i+1))
		if err != nil {
			return fmt.Errorf("%w\n%s", err, stderr)
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("create ig pool%d: %v", i, err)
		}
	}
	table := mustKubeup(t, state, "get", "ig", "--name", name)
	for i := range groups {
		if want := fmt.Sprintf("\npool%d            Node          local        1    %d    a\n", i, i+1); !strings.Contains(table, want) {
			t.Errorf("after %d parallel creates, no %q:\n%s", groups, want, table)
		}
	}
}

// TestParallelChangesOfOneGroup: two changes of the same group with different content at once, each from a file
// read before either: one is written, the other refused (whether it read before or after the first was
// written). Two creates of one group: one is refused, the group exists once.
func TestParallelChangesOfOneGroup(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	nodes := mustKubeup(t, state, "get", "ig", "nodes", "--name", name, "-o", "yaml")
	sizes := []string{"3", "5"}
	var files []string
	for _, size := range sizes {
		f := filepath.Join(dir, "nodes-"+size+".yaml")
		if err := os.WriteFile(f, []byte(strings.Replace(nodes, "maxSize: 1", "maxSize: "+size, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	errs := parallel(2, func(i int) error {
		_, _, err := kubeup(t, state, "replace", "-f", files[i])
		return err
	})
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Errorf("both replaces of the same group were written")
		case !strings.Contains(err.Error(), "instance group nodes of cluster demo.example.com was changed by someone else"):
			t.Errorf("replace -f %s: %v, want a conflict", files[i], err)
		}
	}
	if won < 0 {
		t.Fatal("neither replace was written")
	}
	if table := mustKubeup(t, state, "get", "ig", "--name", name); !strings.Contains(table, "\nnodes            Node          local        1    "+sizes[won]+"    a\n") {
		t.Errorf("after the race, nodes is not the winner's (maxSize %s):\n%s", sizes[won], table)
	}

	errs = parallel(2, func(i int) error {
		_, _, err := kubeup(t, state, "create", "ig", "batch", "--name", name, "--max", sizes[i])
		return err
	})
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("two creates of one group: %v, %v; want one refused", errs[0], errs[1])
	}
	for _, err := range errs {
		if err != nil && !strings.Contains(err.Error(), `instance group "batch" already exists in cluster demo.example.com`) {
			t.Errorf("the refused create: %v", err)
		}
	}
}

// parallel runs f(0) ... f(n-1) at once, each in a goroutine released together, and returns their errors.
func parallel(n int, f func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}
