//go:build e2e

package protokube

import (
	"fmt"
	"slices"
	"testing"

	"kubeup.dev/kubeup/internal/mountinfo"
	"kubeup.dev/kubeup/model"
)

// What protokube's end-to-end tests on a fake cloud (protokube_aws_e2e_test.go, protokube_gce_e2e_test.go) check
// alike.

// mountPoints is the set of this machine's mount points.
func mountPoints(t *testing.T) map[string]bool {
	t.Helper()
	mounts, err := mountinfo.Read()
	if err != nil {
		t.Fatal(err)
	}
	mounted := map[string]bool{}
	for _, m := range mounts {
		mounted[m.MountPoint] = true
	}
	return mounted
}

// wantRecords are the A records protokube publishes for instances of cluster: each etcd member's name at the
// internal address of the instance of its zone; the API's internal and external names hold the placeholder, as
// kubeup made them: no kube-apiserver runs in these tests, and protokube publishes an instance's address there
// only while its own kube-apiserver answers /readyz (TestAPINamesOnlyReadyServers holds that on each provider).
func wantRecords(cluster string, spec *model.Cluster, instances []cloudInstance) map[string][]string {
	want := map[string][]string{}
	for _, n := range instances {
		for _, e := range spec.Spec.EtcdClusters {
			for _, m := range e.Members {
				if m.Zone == n.zone {
					want[fmt.Sprintf("%s.etcd-%s.internal.%s", m.Name, e.Name, cluster)] = []string{n.me.InternalIP}
				}
			}
		}
	}
	want["api.internal."+cluster], want["api."+cluster] = []string{model.DNSPlaceholderIPv4}, []string{model.DNSPlaceholderIPv4}
	return want
}

// checkRecords checks that records (A records by name, without the final dot) hold what want says, in any order.
func checkRecords(t *testing.T, service string, records, want map[string][]string) {
	t.Helper()
	for name, values := range want {
		got := slices.Sorted(slices.Values(records[name]))
		if !slices.Equal(got, values) {
			t.Errorf("%s %s A = %v, want %v", service, name, got, values)
		}
	}
}
