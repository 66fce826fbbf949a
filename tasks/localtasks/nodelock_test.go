package localtasks

import (
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// TestLockNode: one process at a time runs as a node of a pool; another node, or the same once the first lets
// go, may.
func TestLockNode(t *testing.T) {
	pool, err := NewPool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, err := pool.LockNode("node-a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = pool.LockNode("node-a")
	if err == nil || !strings.Contains(err.Error(), `another process runs as node "node-a"`) || !strings.Contains(err.Error(), "--node-id") {
		t.Errorf("a second node-a: %v, want the refusal", err)
	}
	if engine.ClassOf(err) != engine.ClassTerminal {
		t.Errorf("error class %v, want terminal", engine.ClassOf(err))
	}
	other, err := pool.LockNode("node-b")
	if err != nil {
		t.Errorf("node-b beside node-a: %v", err)
	} else {
		other.Close()
	}
	first.Close()
	again, err := pool.LockNode("node-a")
	if err != nil {
		t.Fatalf("node-a once the first let go: %v", err)
	}
	again.Close()
	if vols, err := pool.List(t.Context(), nil); err != nil || len(vols) != 0 {
		t.Errorf("the pool lists %v, %v: its node locks are no volumes", vols, err)
	}
	if _, err := pool.LockNode(""); err == nil {
		t.Error("a node without an id took a lock")
	}
}
