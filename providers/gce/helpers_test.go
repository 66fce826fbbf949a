package gceprovider

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/statestore/gsstore"
)

const demo = "demo.example.com"

// gsClusters are the clusters of a store in internal/fakegcs's bucket "state": a gce cluster's store is gs://.
func gsClusters(t *testing.T) *cloudup.Clusters {
	t.Helper()
	srv := httptest.NewServer(fakegcs.New("state"))
	t.Cleanup(srv.Close)
	t.Setenv(gsstore.EnvStorageEmulatorHost, strings.TrimPrefix(srv.URL, "http://"))
	st, err := statestore.Open(context.Background(), "gs://state/kubeup")
	if err != nil {
		t.Fatal(err)
	}
	return &cloudup.Clusters{Store: st}
}

// group is the instance group of igs named name.
func group(igs []*model.InstanceGroup, name string) *model.InstanceGroup {
	return igs[slices.IndexFunc(igs, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == name })]
}
