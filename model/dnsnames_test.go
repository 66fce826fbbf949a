package model

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// PublishedDNSNames are exactly the names protokube is configured to publish (the API's and the etcd members'),
// so that what delete removes cannot drift from what is published.
func TestPublishedDNSNames(t *testing.T) {
	for _, cloud := range []string{CloudAWS, CloudLocal} {
		t.Run(cloud, func(t *testing.T) {
			c, igs := completeSpec(t, cloud, 3)
			var want []string
			for _, ig := range igs {
				nc := NewNodeConfig(c, ig)
				if nc.Protokube == nil {
					continue
				}
				want = append(want, nc.Protokube.DNSNames...)
				for _, e := range nc.Protokube.EtcdClusters {
					for _, m := range e.Members {
						want = append(want, m.DNSName)
					}
				}
			}
			slices.Sort(want)
			want = slices.Compact(want)
			got := PublishedDNSNames(c)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("PublishedDNSNames (-want +got):\n%s", diff)
			}
			for _, n := range []string{"api.demo.example.com", "api.internal.demo.example.com", "a.etcd-main.internal.demo.example.com"} {
				if !slices.Contains(got, n) {
					t.Errorf("PublishedDNSNames = %v, want %s among them", got, n)
				}
			}
			if slices.Contains(got, c.Metadata.Name) {
				t.Errorf("PublishedDNSNames = %v holds the cluster's own name", got)
			}
		})
	}
}
