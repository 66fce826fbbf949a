package cloudup

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/statestore/gsstore"
)

// testStores are the kinds of state store a test may run on: file://, s3:// (gofakes3 behind the real SDK) and
// gs:// (internal/fakegcs behind the real client). Each open returns the clusters of a fresh, empty store.
var testStores = []struct {
	name string
	open func(t *testing.T) *Clusters
}{
	{"file", func(t *testing.T) *Clusters { return openStore(t, "file://"+t.TempDir()) }},
	{"s3", s3Clusters},
	{"gs", gsClusters},
}

// s3Clusters is a store in gofakes3's bucket "state", with the SDK isolated from the machine's configuration.
func s3Clusters(t *testing.T) *Clusters {
	t.Helper()
	mem := s3mem.New()
	if err := mem.CreateBucket("state"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(mem, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": srv.URL,
	} {
		t.Setenv(k, v)
	}
	return openStore(t, "s3://state/kubeup")
}

// gsClusters is a store in internal/fakegcs's bucket "state".
func gsClusters(t *testing.T) *Clusters {
	t.Helper()
	srv := httptest.NewServer(fakegcs.New("state"))
	t.Cleanup(srv.Close)
	t.Setenv(gsstore.EnvStorageEmulatorHost, strings.TrimPrefix(srv.URL, "http://"))
	return openStore(t, "gs://state/kubeup")
}
