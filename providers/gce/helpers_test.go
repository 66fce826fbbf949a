package gceprovider

import (
	"bytes"
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/statestore/gsstore"
)

const demo = "demo.example.com"

// gsClusters are the clusters of a store in internal/fakegcs's bucket "state": a gce cluster's store is gs://.
func gsClusters(t *testing.T) *cloudup.Clusters {
	t.Helper()
	srv := httptest.NewServer(fakegcs.New("state"))
	t.Cleanup(srv.Close)
	t.Setenv(gsstore.EnvStorageEmulatorHost, strings.TrimPrefix(srv.URL, "http://"))
	st, err := statestore.Open(context.Background(), "gs://state/kubeup")
	if err != nil {
		t.Fatal(err)
	}
	return &cloudup.Clusters{Store: st}
}

// group is the instance group of igs named name.
func group(igs []*model.InstanceGroup, name string) *model.InstanceGroup {
	return igs[slices.IndexFunc(igs, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == name })]
}

// createDemo creates the 3-zone demo cluster (3 control-plane nodes, 2 nodes) in cs and applies it with
// update --yes; it returns the cluster and its instance groups, as created.
func createDemo(t *testing.T, cs *cloudup.Clusters) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	ctx := context.Background()
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudGCE, Project: "kubeup-demo",
		Zones: []string{"europe-west1-b", "europe-west1-c", "europe-west1-d"}, ControlPlaneCount: 3, NodeCount: 2,
		Network: "net", Subnetworks: []string{"sub"}, NodeupURL: "https://example.com/nodeup", NodeupSHA256: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, &out)
	}
	return c, igs
}
