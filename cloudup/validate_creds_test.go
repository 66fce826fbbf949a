package cloudup

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// TestCredentialWarnings: on the local provider, validation warns of no credential (its kubelets prove their
// machine with a credential of their own); a provider's warnings (here one whose kubelets bootstrap with the
// shared token, as aws's and gce's do: their own tests hold their words) never make a cluster unhealthy, and the
// text output shows them.
func TestCredentialWarnings(t *testing.T) {
	local := &model.Cluster{Metadata: model.ObjectMeta{Name: demo}, Spec: model.ClusterSpec{CloudProvider: model.CloudLocal}}
	if got := credentialWarnings(local); got != nil {
		t.Errorf("local: warnings %v, want none", got)
	}

	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, igs = model.Complete(c, igs)
	c.Spec.CloudProvider = "shared-token" // the checks read the API; the warnings the provider
	withProvider(t, c.Spec.CloudProvider, sharedTokenProvider{})
	val := healthyWorld(c).serve(t, c, igs).validate(context.Background())
	if !val.Healthy || len(val.Warnings) != 2 {
		t.Fatalf("healthy %t, %d warnings: want healthy with 2 warnings", val.Healthy, len(val.Warnings))
	}
	var b bytes.Buffer
	if err := val.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "WARNINGS (2)\nKubeletCredentials "+demo+": kubelets bootstrap with the cluster's shared bootstrap token") ||
		!strings.Contains(b.String(), "is ready") {
		t.Errorf("the text does not show the warnings, or the verdict:\n%s", b.String())
	}
}

// sharedTokenProvider is the local provider but for its credential warnings: those of a cloud whose kubelets
// bootstrap with the shared token, and whose control plane shares the nodes' identity.
type sharedTokenProvider struct{ localProvider }

func (sharedTokenProvider) CredentialWarnings(c *model.Cluster) []ValidationFailure {
	return SharedTokenWarnings(c, "every machine runs as one identity")
}
