package main

import (
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
