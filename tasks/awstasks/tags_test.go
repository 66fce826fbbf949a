package awstasks

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tagChanges removes only the keys of kubeup's exact managed set; an operator's keys, under k8s.io/ or not, and
// another cluster's ownership tag stay.
func TestTagChanges(t *testing.T) {
	c := &Cloud{Cluster: testCluster}
	actual := map[string]string{
		"Name":                                     "nodes." + testCluster,
		ClusterTag(testCluster):                    "owned",
		ClusterTag("other.example.com"):            "shared",
		"k8s.io/role/control-plane":                "1",
		"k8s.io/etcd/events":                       "a/a",
		"kubeup.dev/instance-group":                "old",
		"k8s.io/cluster-autoscaler/enabled":        "true",
		"k8s.io/cluster-autoscaler/" + testCluster: "owned",
		"k8s.io/rolex":                             "not a role tag",
		"team":                                     "db",
		"aws:cloudformation:stack-name":            "s",
	}
	desired := c.desiredTags("nodes."+testCluster, map[string]string{"k8s.io/role/node": "1", "k8s.io/etcd/events": "a/a,b"})
	set, remove := tagChanges(actual, desired)
	if diff := cmp.Diff(map[string]string{"k8s.io/role/node": "1", "k8s.io/etcd/events": "a/a,b"}, set); diff != "" {
		t.Errorf("set (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"k8s.io/role/control-plane", "kubeup.dev/instance-group"}, remove); diff != "" {
		t.Errorf("remove (-want +got):\n%s", diff)
	}

	// Find reports the keys asked for and the managed ones, so that a managed key no task asks for shows as a
	// change; never the others.
	view := c.tagView(actual, map[string]string{"team": "web"})
	want := map[string]string{"team": "db", "k8s.io/role/control-plane": "1", "k8s.io/etcd/events": "a/a", "kubeup.dev/instance-group": "old"}
	if diff := cmp.Diff(want, view); diff != "" {
		t.Errorf("tagView (-want +got):\n%s", diff)
	}
}
