package model

import "testing"

// TestValidateInstanceGroup checks what a node can check of its configuration: one instance group and the
// cluster, without the cluster's other groups.
func TestValidateInstanceGroup(t *testing.T) {
	for _, controlPlanes := range []int{1, 3} {
		c, igs := completeSpec(t, CloudLocal, controlPlanes)
		for _, ig := range igs {
			if err := ValidateInstanceGroup("node configuration", c, ig); err != nil {
				t.Errorf("%d control planes, group %s alone: %v", controlPlanes, ig.Metadata.Name, err)
			}
		}
	}

	tests := []struct {
		name  string
		group string
		set   func(c *Cluster, ig *InstanceGroup)
		want  []wantProblem
	}{
		{
			name:  "a role that does not exist",
			group: "nodes",
			set:   func(_ *Cluster, ig *InstanceGroup) { ig.Spec.Role = "Bogus" },
			want:  []wantProblem{{"instancegroup/nodes: spec.role", `"Bogus" is not a role: want ControlPlane or Node$`}},
		},
		{
			name:  "a control-plane group turned into a node group",
			group: "control-plane-b",
			set:   func(_ *Cluster, ig *InstanceGroup) { ig.Spec.Role = RoleNode },
			want: []wantProblem{
				{"spec.etcdClusters[0].members[1].instanceGroup", `instance group "control-plane-b" has role Node: etcd members run on ControlPlane groups`},
				{"spec.etcdClusters[1].members[1].instanceGroup", `instance group "control-plane-b" has role Node: etcd members run on ControlPlane groups`},
			},
		},
		{
			name:  "a hostile node label",
			group: "nodes",
			set: func(c *Cluster, _ *InstanceGroup) {
				c.Spec.Kubelet.NodeLabels = map[string]string{"a": "x\"\nLD_PRELOAD=/tmp/evil.so"}
			},
			want: []wantProblem{{`spec.kubelet.nodeLabels["a"]`, `"x\"\nLD_PRELOAD=/tmp/evil.so" is not a label value`}},
		},
		{
			name:  "a relative podManifestPath",
			group: "control-plane-a",
			set:   func(c *Cluster, _ *InstanceGroup) { c.Spec.Kubelet.PodManifestPath = "../manifests" },
			want:  []wantProblem{{"spec.kubelet.podManifestPath", `"../manifests" must be an absolute path`}},
		},
		{
			name:  "an unsupported version",
			group: "nodes",
			set:   func(c *Cluster, _ *InstanceGroup) { c.Spec.KubernetesVersion = "1.2.3" },
			want:  []wantProblem{{"spec.kubernetesVersion", `"1.2.3" is not supported`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, igs := completeSpec(t, CloudLocal, 3)
			ig := group(igs, tt.group)
			tt.set(c, ig)
			err := ValidateInstanceGroup("node configuration", c, ig)
			matchProblems(t, tt.want, problemsOf(t, err))
			if err != nil && err.(*InvalidError).Source != "node configuration" {
				t.Errorf("Source = %q", err.(*InvalidError).Source)
			}
		})
	}
}
