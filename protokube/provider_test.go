package protokube

import (
	"log/slog"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// TestNotLinked: protokube built without a cloud (cmd/protokube has the local provider only) refuses that cloud's
// configuration and names the build that has it; an unknown cloud has none to name.
func TestNotLinked(t *testing.T) {
	const want = `protokube: spec.cloudProvider "aws" is not a cloud this protokube has (it has local): run protokube-aws, the build for aws`
	if err := notLinked("aws", "local"); err.Error() != want {
		t.Errorf("notLinked(aws) = %v, want %s", err, want)
	}
	const wantUnknown = `protokube: spec.cloudProvider "azure" is not a cloud this protokube has (it has local)`
	if err := notLinked("azure", "local"); err.Error() != wantUnknown {
		t.Errorf("notLinked(azure) = %v, want %s", err, wantUnknown)
	}
}

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
