package gcelabels

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTagsEncodeAsLabelsAndBack(t *testing.T) {
	tags := map[string]string{
		"kubernetes.io/cluster/gce.example.com": "owned",
		"k8s.io/role/control-plane":             "1",
		"k8s.io/etcd/main":                      "a/a,b,c",
		"team":                                  "blue",
	}
	labels, err := EncodeTags(tags)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		ClusterLabelKey("gce.example.com"): "owned", ClusterNameLabel: "gce-example-com",
		"kubeup-role-control-plane": "1", "kubeup-etcd-main": "a_a_b_c", "team": "blue",
	}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("EncodeTags (-want +got):\n%s", diff)
	}
	for k, v := range labels {
		if !LabelKeyRE.MatchString(k) || !LabelValueRE.MatchString(v) {
			t.Errorf("%s=%s is not a GCE label", k, v)
		}
	}
	if diff := cmp.Diff(tags, DecodeLabels(labels, "other.example.com", "gce.example.com")); diff != "" {
		t.Errorf("DecodeLabels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(EtcdLabels("main", "a", []string{"c", "a", "b"}), map[string]string{"kubeup-etcd-main": "a_a_b_c", "kubeup-role-control-plane": "1"}); diff != "" {
		t.Errorf("EtcdLabels (-want +got):\n%s", diff)
	}
	if ClusterLabelKey("a.b") == ClusterLabelKey("a-b") {
		t.Error("clusters a.b and a-b share an ownership label")
	}
	if _, err := EncodeTags(map[string]string{"Name": "x"}); err == nil {
		t.Error("EncodeTags took a tag that is no label")
	}
}

func TestResourceName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a.etcd-main.gce.example.com", "a-etcd-main-gce-example-com"},
		{"1.example.com", "k-1-example-com"},
		{"Nodes.Example.COM.", "nodes-example-com"},
	} {
		if got := ResourceName(tc.in, 63); got != tc.want || !ValidName(got) {
			t.Errorf("ResourceName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := "a.etcd-main.a-very-long-cluster-name-that-goes-on-and-on.example.com"
	got := ResourceName(long, 54)
	if len(got) > 54 || !ValidName(got) || got == ResourceName(long+"x", 54) {
		t.Errorf("ResourceName of a long name = %q", got)
	}
}
