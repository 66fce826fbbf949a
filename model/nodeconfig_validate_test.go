package model

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeNodeConfigValidates: every group's configuration of a valid cluster decodes (the other groups are
// not in it, and their absence is no problem); a configuration whose spec kubeup would not have written is
// refused with field paths, even though its sha256 matches.
func TestDecodeNodeConfigValidates(t *testing.T) {
	for _, cloud := range []string{CloudLocal, CloudAWS, CloudGCE} {
		for _, controlPlanes := range []int{1, 3} {
			c, igs := completeSpec(t, cloud, controlPlanes)
			for _, ig := range igs {
				t.Run(fmt.Sprintf("%s %d %s", cloud, controlPlanes, ig.Metadata.Name), func(t *testing.T) {
					obj, err := NewNodeConfig(c, ig).Encode()
					if err != nil {
						t.Fatal(err)
					}
					if _, err := DecodeNodeConfigObject("conf", obj, nil); err != nil {
						t.Errorf("the configuration of a valid cluster: %v", err)
					}
				})
			}
		}
	}

	c, igs := completeSpec(t, CloudLocal, 3)
	for _, tt := range []struct {
		name   string
		group  string
		mutate func(nc *NodeConfig)
		want   []Problem
	}{
		{
			// nodeup would apply it, and drop the control-plane taint.
			name: "role Bogus", group: "control-plane-b",
			mutate: func(nc *NodeConfig) { nc.InstanceGroup.Spec.Role = "Bogus" },
			want: []Problem{
				// b's etcd members now name a group that is not a control-plane group.
				{Path: "spec.etcdClusters[0].members[1].instanceGroup", Message: `instance group "control-plane-b" has role Bogus: etcd members run on ControlPlane groups`},
				{Path: "spec.etcdClusters[1].members[1].instanceGroup", Message: `instance group "control-plane-b" has role Bogus: etcd members run on ControlPlane groups`},
				{Path: "instancegroup/control-plane-b: spec.role", Message: `"Bogus" is not a role: want ControlPlane or Node`},
			},
		},
		{
			name: "role Bogus on a worker", group: "nodes",
			mutate: func(nc *NodeConfig) { nc.InstanceGroup.Spec.Role = "Bogus" },
			want: []Problem{
				{Path: "instancegroup/nodes: spec.role", Message: `"Bogus" is not a role: want ControlPlane or Node`},
			},
		},
		{
			name: "zone of another cluster", group: "nodes",
			mutate: func(nc *NodeConfig) { nc.InstanceGroup.Spec.Zones = []string{"z"} },
			want: []Problem{
				{Path: "instancegroup/nodes: spec.zones[0]", Message: `"z" is not one of the cluster's spec.zones [a b c]`},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nc := NewNodeConfig(c, findInstanceGroup(igs, tt.group))
			tt.mutate(nc)
			obj, err := nc.Encode()
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeNodeConfigObject("conf", obj, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.HasPrefix(err.Error(), "conf: ") {
				t.Errorf("error %q does not start with the source", err)
			}
			got := problemsOf(t, err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
