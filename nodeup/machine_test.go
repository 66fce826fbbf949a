package nodeup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"kubeup.dev/kubeup/model"
)

// TestRecordLocalMachine: an apply on a node of a local-provider cluster whose pool is on this host records the
// machine beside the pool, under its --node-id, with the sha256 of the configuration it converged; a dry run,
// and a cluster whose pool is not here, record nothing.
func TestRecordLocalMachine(t *testing.T) {
	dir := t.TempDir()
	pool := filepath.Join(dir, "state-local", "volumes")
	obj := nodeConfigWith(t, "control-plane-a", func(c *model.Cluster) { c.Spec.Local.PoolDir = pool })
	conf := writeConf(t, dir, "conf", obj)
	root := filepath.Join(dir, "root")
	record := filepath.Join(dir, "state-local", "machines", testCluster, "node-7.json")

	// The pool does not exist yet: nothing is recorded.
	if r := run(t, Options{Conf: conf, Root: root, NodeID: "node-7"}); r.runErr != nil {
		t.Fatal(r.runErr)
	}
	if _, err := os.Stat(filepath.Dir(record)); !os.IsNotExist(err) {
		t.Fatalf("a machine whose pool is not on this host was recorded: %v", err)
	}
	if err := os.MkdirAll(pool, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := run(t, Options{Conf: conf, Root: root, NodeID: "node-7", DryRun: true}); r.runErr != nil {
		t.Fatal(r.runErr)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Fatalf("a dry run recorded the machine: %v", err)
	}
	if r := run(t, Options{Conf: conf, Root: root, NodeID: "node-7"}); r.runErr != nil {
		t.Fatal(r.runErr)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var got LocalMachine
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	want := LocalMachine{NodeID: "node-7", Cluster: testCluster, InstanceGroup: "control-plane-a", Role: model.RoleControlPlane, Zone: "a",
		Root: root, Conf: conf, Nodeup: exe, ConfigSHA256: sha256Of(unseal(t, obj))}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(LocalMachine{}, "Converged")); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if time.Since(got.Converged) > time.Minute {
		t.Errorf("converged at %s", got.Converged)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(record), ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// An id that is not a plain name is refused before anything changes (TestRefusesBadNodeID).
}

// TestRefusesBadNodeID: a --node-id that is not a plain name (a control character would reach the terminal of
// whoever runs `kubeup rolling-update`, which prints the recorded ids; a '/' would record the machine elsewhere)
// is a *ConfigError that quotes it, before anything under the root or beside the pool is changed, and without a
// retry.
func TestRefusesBadNodeID(t *testing.T) {
	dir := t.TempDir()
	pool := filepath.Join(dir, "state-local", "volumes")
	if err := os.MkdirAll(pool, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := writeConf(t, dir, "conf", nodeConfigWith(t, "nodes", func(c *model.Cluster) { c.Spec.Local.PoolDir = pool }))
	for _, id := range []string{"evil\x1b[2J\x1b[31mnode", "node\nforged line", "../x", "a b"} {
		for _, dry := range []bool{false, true} {
			root := filepath.Join(dir, "root")
			before := treeHash(t, dir)
			r := run(t, Options{Conf: conf, Root: root, NodeID: id, DryRun: dry, Retries: 3, RetryBackoff: time.Millisecond})
			var ce *ConfigError
			if !errors.As(r.runErr, &ce) || !strings.Contains(r.runErr.Error(), fmt.Sprintf("--node-id: node id %q", id)) {
				t.Errorf("--node-id %q (dry run %v): Run error = %v, want a *ConfigError quoting the id", id, dry, r.runErr)
			} else if strings.ContainsAny(r.runErr.Error(), "\x1b\n") {
				t.Errorf("--node-id %q: the error holds a control character: %q", id, r.runErr)
			}
			if after := treeHash(t, dir); after != before {
				t.Errorf("--node-id %q (dry run %v): the tree changed:\nbefore:\n%s\nafter:\n%s", id, dry, before, after)
			}
		}
	}
}
