package protokube

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// TestOneProtokubePerNode: on the local provider, a protokube holds its node id's lock of the pool from its
// first round until Run returns; a second protokube of the same id gets no volumes (its rounds fail, naming the
// node and the fix), another id does, a dry run of the same id does (it changes nothing), and the same id does
// once the first let go.
func TestOneProtokubePerNode(t *testing.T) {
	dir := t.TempDir()
	nc := &model.NodeConfig{Protokube: &model.ProtokubeConfig{CloudProvider: model.CloudLocal, DNSZone: "example.com",
		Local: &model.LocalSpec{PoolDir: filepath.Join(dir, "volumes"), ZoneFile: filepath.Join(dir, "zone")}}}
	providers := func(o *Options, id string) error {
		_, _, err := o.cloudProviders(nc, dir, volumetasks.Holder{NodeID: id}, time.Minute)
		return err
	}
	first, second, other := &Options{}, &Options{}, &Options{}
	if err := providers(first, "node1"); err != nil {
		t.Fatal(err)
	}
	if err := providers(first, "node1"); err != nil {
		t.Errorf("the first protokube's next round: %v", err)
	}
	err := providers(second, "node1")
	if err == nil || !strings.Contains(err.Error(), `another process runs as node "node1"`) || !strings.Contains(err.Error(), "give each node its own --node-id") {
		t.Errorf("a second protokube as node1: %v, want the refusal", err)
	}
	if err := providers(&Options{DryRun: true}, "node1"); err != nil {
		t.Errorf("a dry run as node1 beside it (it changes nothing): %v", err)
	}
	if err := providers(other, "node2"); err != nil {
		t.Errorf("node2 beside node1: %v", err)
	}
	first.unlockNode()
	if err := providers(second, "node1"); err != nil {
		t.Errorf("node1 again once the first let go: %v", err)
	}
	second.unlockNode()
	other.unlockNode()
}
