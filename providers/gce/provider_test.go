package gceprovider

import (
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// TestCredentialWarnings: on gce, validation names the gap of kubelets' bootstrap (a shared token, no machine
// proof), and that every machine runs as one service account.
func TestCredentialWarnings(t *testing.T) {
	c := &model.Cluster{Metadata: model.ObjectMeta{Name: demo},
		Spec: model.ClusterSpec{CloudProvider: model.CloudGCE, GCE: &model.GCESpec{ServiceAccount: "default"}}}
	got := provider{}.CredentialWarnings(c)
	want := []string{"no signed instance identity on gce yet", "every machine runs as service account default"}
	if len(got) != len(want) {
		t.Fatalf("warnings %v, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i].Message, w) {
			t.Errorf("warning %q does not say %q", got[i], w)
		}
	}
}
