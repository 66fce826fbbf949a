package nodegraph

import (
	"testing"

	"kubeup.dev/kubeup/model"
)

// completeSpec is the complete spec of a local cluster named demo.example.com with controlPlanes control-plane
// groups and a "nodes" group of 2, as `kubeup create cluster` writes it (model's tests have the same fixture).
func completeSpec(t testing.TB, cloud string, controlPlanes int) (*model.Cluster, []*model.InstanceGroup) {
	t.Helper()
	if cloud != model.CloudLocal {
		t.Fatalf("completeSpec: cloud %q: the node graph's tests use local clusters", cloud)
	}
	c, igs, err := model.NewCluster(model.NewClusterOptions{
		Name:              "demo.example.com",
		CloudProvider:     cloud,
		ControlPlaneCount: controlPlanes,
		NodeCount:         2,
		Zones:             []string{"a", "b", "c"},
	})
	if err != nil {
		t.Fatalf("NewCluster: %v", err)
	}
	c.Spec.ConfigBase = "file:///tmp/s/demo.example.com"
	return model.Complete(c, igs)
}
