package main

import (
	"os"

	"github.com/google/go-cmp/cmp"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoleSpellingsAndRepeatedNames: graph --role takes the instance groups' spelling of a role as well as its
// own, and a group named twice is shown once.
func TestRoleSpellingsAndRepeatedNames(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	for _, pair := range [][2]string{{"control-plane", "ControlPlane"}, {"node", "Node"}} {
		if a, b := mustKubeup(t, state, "graph", name, "--role", pair[0]), mustKubeup(t, state, "graph", name, "--role", pair[1]); a != b || !strings.Contains(a, "digraph") {
			t.Errorf("graph --role %s and --role %s differ:\n%s\n---\n%s", pair[0], pair[1], a, b)
		}
	}
	if _, _, err := kubeup(t, state, "graph", name, "--role", "master"); err == nil || !strings.Contains(err.Error(), "want control-plane or node") {
		t.Errorf("graph --role master: %v", err)
	}
	table := mustKubeup(t, state, "get", "ig", "nodes", "nodes", "--name", name)
	if n := strings.Count(table, "\nnodes "); n != 1 {
		t.Errorf("get ig nodes nodes shows the group %d times:\n%s", n, table)
	}
}

// TestEditKindAndEmpty: an edit that changes the kind of what it shows is refused for that, in one line (not as
// the other kind's unknown fields), and the edit kept; an emptied file cancels the edit, as kubectl edit's does.
func TestEditKindAndEmpty(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	before := treeSums(t, state)

	t.Setenv("KUBE_EDITOR", `sed -i -e "s/^kind: InstanceGroup$/kind: Cluster/"`)
	_, _, err := kubeup(t, state, "edit", "ig", "nodes", "--name", name)
	if err == nil || !strings.Contains(err.Error(), "kind: Cluster: an edit changes the object it shows, a InstanceGroup, and cannot make it another kind: set kind back to InstanceGroup") ||
		strings.Contains(err.Error(), "unknown field") {
		t.Errorf("edit ig changing the kind: %v", err)
	}
	if _, kept, ok := strings.Cut(err.Error(), "your edit is kept in "); ok {
		t.Cleanup(func() { os.Remove(strings.Fields(kept)[0]) })
	} else {
		t.Errorf("the edit is not kept: %v", err)
	}

	t.Setenv("KUBE_EDITOR", `sh -c ': > "$1"' sh`)
	if out, _, err := kubeup(t, state, "edit", "cluster", name); err != nil || !strings.Contains(out, "Edit cancelled: no changes made.") {
		t.Errorf("edit cluster emptying the file: %v\n%s", err, out)
	}
	if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
}

// TestCreateControlPlaneGroupNeedsAZone: create instancegroup --role ControlPlane without --zones, in a cluster of
// several zones, is told that first and alone.
func TestCreateControlPlaneGroupNeedsAZone(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a,b,c")
	before := treeSums(t, state)
	_, _, err := kubeup(t, state, "create", "ig", "cp-d", "--name", name, "--role", "ControlPlane")
	if err == nil || !strings.Contains(err.Error(), "--zones is required for a ControlPlane group of a cluster with several zones") ||
		!strings.Contains(err.Error(), "give --zones ZONE, one of a, b, c; nothing was written") || strings.Contains(err.Error(), "problems") {
		t.Errorf("create ig --role ControlPlane without --zones: %v", err)
	}
	if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
	single := filepath.Join(t.TempDir(), "s")
	mustKubeup(t, single, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	if _, _, err := kubeup(t, single, "create", "ig", "cp-b", "--name", name, "--role", "ControlPlane", "--dry-run"); err != nil && strings.Contains(err.Error(), "--zones is required") {
		t.Errorf("a single-zone cluster's ControlPlane group needs no --zones: %v", err)
	}
}
