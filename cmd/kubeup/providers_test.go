package main

import (
	"io"
	"strings"
	"testing"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

// TestKubeupHasEveryCloud: kubeup links the provider of every cloud the model takes (providers.go imports them),
// and a cloud it has none for is refused with the clouds it has.
func TestKubeupHasEveryCloud(t *testing.T) {
	c := &model.Cluster{Metadata: model.ObjectMeta{Name: "demo.example.com"}, Spec: model.ClusterSpec{CloudProvider: "azure"}}
	const want = `cluster demo.example.com: spec.cloudProvider "azure" is not a cloud this kubeup has (it has aws, gce, local)`
	if err := cloudup.WriteCloudGraph(io.Discard, c, nil); err == nil || err.Error() != want {
		t.Errorf("WriteCloudGraph(azure) = %v, want %s", err, want)
	}
	for _, cloud := range []string{model.CloudAWS, model.CloudGCE, model.CloudLocal} {
		// An empty spec of the cloud: its provider's graph builder refuses it, not the registry.
		c := &model.Cluster{Metadata: c.Metadata, Spec: model.ClusterSpec{CloudProvider: cloud}}
		if err := cloudup.WriteCloudGraph(io.Discard, c, nil); err == nil || strings.Contains(err.Error(), "is not a cloud") {
			t.Errorf("WriteCloudGraph(%s) = %v, want its provider's refusal of an empty spec", cloud, err)
		}
	}
}
