package cloudup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/localtasks"
)

// A volume of a local cluster that a node still holds (here by its unexpired claim) is marked in the dry run of
// delete cluster, with its node, and refused by --yes, which then deletes nothing at all: not the volume, not
// its claim, not the other volumes, not the state. Once the claim expired, the delete removes the volume with its
// claim, and the lock files of the cluster's machines.
func TestDeleteRefusesALocalVolumeANodeHolds(t *testing.T) {
	ctx := context.Background()
	store := filepath.Join(t.TempDir(), "state")
	cs := openStore(t, "file://"+store)
	var out bytes.Buffer
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudLocal, Zones: []string{"a"}, DNSZone: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &out, Apply: true}); err != nil {
		t.Fatal(err)
	}
	pool := filepath.Join(store+"-local", "volumes")
	vol := "a.etcd-main." + demo
	if _, err := os.Stat(filepath.Join(pool, vol+".json")); err != nil {
		t.Fatalf("the cluster's volume: %v", err)
	}
	claim := filepath.Join(pool, vol+".claim")
	renewed := time.Now().UTC().Truncate(time.Second)
	if err := os.WriteFile(claim, []byte(`{"nodeID": "node1", "since": "`+renewed.Format(time.RFC3339)+`", "renewed": "`+
		renewed.Format(time.RFC3339)+`", "lease": "1h0m0s"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	machines := filepath.Join(store+"-local", "machines", demo)
	if err := os.MkdirAll(machines, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(machines, "node1.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := localtasks.NewPool(pool)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := p.LockNode("node1")
	if err != nil {
		t.Fatal(err)
	}
	lock.Close() // its protokube ended

	out.Reset()
	if err := cs.Delete(ctx, demo, DeleteOptions{Out: &out}); err != nil {
		t.Fatal(err)
	}
	until := renewed.Add(time.Hour).Format(time.DateTime)
	want := "  LocalVolume/" + vol + " (held: claimed by node node1 until " + until + " UTC: the delete refuses it, and deletes nothing"
	if !strings.Contains(out.String(), want) {
		t.Errorf("the dry run does not say\n%s\nit says:\n%s", want, out.String())
	}

	before := poolFiles(t, pool)
	out.Reset()
	err = cs.Delete(ctx, demo, DeleteOptions{Apply: true, Out: &out})
	if err == nil || !strings.Contains(err.Error(), "volume "+vol+": claimed by node node1 until "+until+" UTC: stop protokube on node node1") {
		t.Fatalf("delete --yes: %v, want a refusal that names the volume and its node", err)
	}
	if out.Len() != 0 {
		t.Errorf("the refused delete says it deleted:\n%s", out.String())
	}
	if diff := strings.Join(poolFiles(t, pool), " "); diff != strings.Join(before, " ") {
		t.Errorf("the refused delete changed the pool: %v, was %v", diff, before)
	}
	if _, err := cs.Store.ReadFile(ctx, specPath(demo)); err != nil {
		t.Errorf("the refused delete deleted the spec: %v", err)
	}

	// The claim expired (its node is gone): the volume goes with its claim, and the machine's lock file too.
	if err := os.WriteFile(claim, []byte(`{"nodeID": "node1", "since": "2020-01-01T00:00:00Z", "renewed": "2020-01-01T00:00:00Z", "lease": "1h0m0s"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cs.Delete(ctx, demo, DeleteOptions{Apply: true, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if left := poolFiles(t, pool); len(left) != 0 {
		t.Errorf("files left in the pool: %v", left)
	}
}

// poolFiles lists the names of the files in dir; none when it is gone.
func poolFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
