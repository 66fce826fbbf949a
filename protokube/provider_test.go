package protokube

import (
	"log/slog"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// TestCloudProvidersOfAnUnknownCloud: a configuration of a cloud this protokube has no provider for is refused
// with an error that names spec.cloudProvider, its value and the clouds it has; identify leaves it alone.
func TestCloudProvidersOfAnUnknownCloud(t *testing.T) {
	pc := &model.ProtokubeConfig{CloudProvider: "azure"}
	nc := &model.NodeConfig{Protokube: pc}
	o := &Options{Logger: slog.New(slog.DiscardHandler)}
	if err := o.identify(t.Context(), pc); err != nil {
		t.Fatalf("identify: %v", err)
	}
	const want = `protokube: spec.cloudProvider "azure" is not a cloud this protokube has (it has aws, gce, local)`
	if _, _, err := o.cloudProviders(nc, t.TempDir(), volumetasks.Holder{NodeID: "n"}, time.Minute); err == nil || err.Error() != want {
		t.Errorf("cloudProviders = %v, want %s", err, want)
	}
}
