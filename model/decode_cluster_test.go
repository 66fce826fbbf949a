package model

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeClusterOfDocuments: the cluster a file is for is its Cluster's name, else the LabelCluster of its
// instance groups; documents that name different clusters are refused, each problem naming its document.
func TestDecodeClusterOfDocuments(t *testing.T) {
	group := func(name, cluster string) string {
		doc := "apiVersion: kubeup.dev/v1alpha1\nkind: InstanceGroup\nmetadata:\n  name: " + name + "\n"
		if cluster != "-" {
			doc += "  labels:\n    kubeup.dev/cluster: " + cluster + "\n"
		}
		return doc + "spec:\n  role: Node\n"
	}
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{"a cluster", clusterDoc, "demo.example.com", ""},
		{"a cluster and its labelled group", clusterDoc + "---\n" + group("nodes", "demo.example.com"), "demo.example.com", ""},
		{"groups alone, labelled", group("a", "-") + "---\n" + group("b", "demo.example.com"), "demo.example.com", ""},
		{"a group alone, unlabelled", group("a", "-"), "", ""},
		{"a group of another cluster than the file's Cluster", clusterDoc + "---\n" + group("nodes", "other.example.com"), "",
			`cluster.yaml: document 2 (line 9): metadata.labels[kubeup.dev/cluster]: "other.example.com" is not "demo.example.com", the cluster of the file's Cluster: ` +
				`a file holds one cluster's documents; put the groups of cluster "other.example.com" in a file of their own`},
		{"groups of two clusters", group("a", "one.example.com") + "---\n" + group("b", "two.example.com"), "",
			`cluster.yaml: document 2 (line 10): metadata.labels[kubeup.dev/cluster]: "two.example.com" is not "one.example.com", the cluster of InstanceGroup "a"`},
		{"an empty label", group("a", `""`), "",
			`cluster.yaml: metadata.labels[kubeup.dev/cluster]: empty: name the group's cluster (for example demo.example.com), or leave the label out`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Decode("cluster.yaml", []byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode: %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, objs.ClusterName()); diff != "" {
				t.Errorf("ClusterName (-want +got):\n%s", diff)
			}
		})
	}
}
