package awsprovider

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/model"
)

// zonesEnv points the SDK at endpoint (EC2) with credentials keyID (none: "") and nothing else.
func zonesEnv(t *testing.T, endpoint, keyID string) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": keyID, "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_EC2": endpoint, "AWS_MAX_ATTEMPTS": "1",
	} {
		t.Setenv(k, v)
	}
}

func awsZonesSpec(region string, zones ...string) *model.Cluster {
	return &model.Cluster{Metadata: model.ObjectMeta{Name: "aws.example.com"},
		Spec: model.ClusterSpec{CloudProvider: model.CloudAWS, Region: region, Zones: zones}}
}

// The zones are checked against what EC2 lists in the region: every one that is not is said at its index; a
// local cluster's are not checked.
func TestCheckZones(t *testing.T) {
	srv := httptest.NewServer(fakeaws.New())
	t.Cleanup(srv.Close)
	zonesEnv(t, srv.URL, "x")
	ctx := context.Background()
	if w, err := cloudup.CheckZones(ctx, "test", awsZonesSpec("eu-west-1", "eu-west-1a", "eu-west-1c")); w != "" || err != nil {
		t.Errorf("zones of the region: warning %q, error %v", w, err)
	}
	_, err := cloudup.CheckZones(ctx, "test", awsZonesSpec("eu-west-1", "eu-west-1x", "eu-west-1a", "us-east-1b"))
	var inv *model.InvalidError
	if !errors.As(err, &inv) || len(inv.Problems) != 2 || inv.Problems[0].Path != "spec.zones[0]" || inv.Problems[1].Path != "spec.zones[2]" ||
		!strings.Contains(inv.Problems[1].Message, `"us-east-1b" is not a zone of region eu-west-1 (its zones: eu-west-1a,`) {
		t.Errorf("error %v, want spec.zones[0] and spec.zones[2] refused", err)
	}
	if w, err := cloudup.CheckZones(ctx, "test", &model.Cluster{Spec: model.ClusterSpec{CloudProvider: model.CloudLocal, Zones: []string{"x"}}}); w != "" || err != nil {
		t.Errorf("local zones: warning %q, error %v; want them unchecked", w, err)
	}
}

// Without credentials, the zones are not checked, and the warning says so and why.
func TestCheckZonesWithoutCredentials(t *testing.T) {
	srv := httptest.NewServer(fakeaws.New())
	t.Cleanup(srv.Close)
	zonesEnv(t, srv.URL, "")
	w, err := cloudup.CheckZones(context.Background(), "test", awsZonesSpec("us-east-1", "us-east-1x"))
	if err != nil || !strings.Contains(w, "spec.zones were not checked against the zones of region us-east-1 (") ||
		!strings.Contains(w, "credentials") {
		t.Errorf("warning %q, error %v; want a warning that names the missing credentials", w, err)
	}
}
