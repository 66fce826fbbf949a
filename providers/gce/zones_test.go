package gceprovider

import (
	"context"
	"strings"
	"testing"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

// Without credentials (no application default credentials, no metadata server), the zones are not checked,
// and the warning says so.
func TestCheckZonesGCEWithoutCredentials(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{"KUBEUP_GCE_ENDPOINT": "", "GOOGLE_APPLICATION_CREDENTIALS": "", "HOME": home,
		"CLOUDSDK_CONFIG": home, "GCE_METADATA_HOST": "127.0.0.1:1"} {
		t.Setenv(k, v)
	}
	c := &model.Cluster{Spec: model.ClusterSpec{CloudProvider: model.CloudGCE, Project: "p", Zones: []string{"us-central1-x"}}}
	w, err := cloudup.CheckZones(context.Background(), "test", c)
	if err != nil || !strings.Contains(w, "spec.zones were not checked against the zones of project p (") {
		t.Errorf("warning %q, error %v; want a warning", w, err)
	}
}
