package protokube

import (
	"strings"
	"testing"

	"kubeup.dev/kubeup/tasks/volumetasks"
)

// The cloud-neutral part of the fixtures of protokube's tests on a fake cloud (aws_fixture_test.go,
// protokube_gce_e2e_test.go; cloud_e2e_test.go holds what only the e2e tests use).

// cloudInstance is a fake instance as its claims name it, in its zone.
type cloudInstance struct {
	me   volumetasks.Holder
	zone string
}

// setenv sets env for the rest of the test (this process: the test cannot run in parallel).
func setenv(t *testing.T, env []string) {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}
