package nodeup

import (
	"encoding/json"
	"os"
	"path/filepath"
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

	// An id that is not a file name is not recorded (the node is converged all the same).
	if r := run(t, Options{Conf: conf, Root: root, NodeID: "../x"}); r.runErr != nil {
		t.Fatal(r.runErr)
	}
	if _, err := os.Stat(filepath.Join(dir, "state-local", "machines", "x.json")); !os.IsNotExist(err) {
		t.Errorf("--node-id ../x wrote outside the cluster's directory: %v", err)
	}
}
