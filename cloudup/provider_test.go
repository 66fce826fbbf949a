package cloudup

import (
	"io"
	"testing"

	"kubeup.dev/kubeup/model"
)

// TestProviderFor: every cloud the model takes has a provider, and a cloud this kubeup has none for is an error
// that names the cluster, spec.cloudProvider's value and the clouds it has, from every entry point.
func TestProviderFor(t *testing.T) {
	for _, name := range []string{model.CloudAWS, model.CloudGCE, model.CloudLocal} {
		c := &model.Cluster{Metadata: model.ObjectMeta{Name: "demo.example.com"}, Spec: model.ClusterSpec{CloudProvider: name}}
		if p, err := providerFor(c); err != nil || p == nil {
			t.Errorf("providerFor(%s) = %v, %v: want its provider", name, p, err)
		}
	}
	c := &model.Cluster{Metadata: model.ObjectMeta{Name: "demo.example.com"}, Spec: model.ClusterSpec{CloudProvider: "azure"}}
	const want = `cluster demo.example.com: spec.cloudProvider "azure" is not a cloud this kubeup has (it has aws, gce, local)`
	if _, err := providerFor(c); err == nil || err.Error() != want {
		t.Errorf("providerFor(azure) = %v, want %s", err, want)
	}
	if err := WriteCloudGraph(io.Discard, c, nil); err == nil || err.Error() != want {
		t.Errorf("WriteCloudGraph(azure) = %v, want %s", err, want)
	}
	if _, err := (&Clusters{}).openRolling(t.Context(), c, nil); err == nil || err.Error() != want {
		t.Errorf("openRolling(azure) = %v, want %s", err, want)
	}
	if got := credentialWarnings(c); got != nil {
		t.Errorf("credentialWarnings(azure) = %v, want none", got)
	}
}
