package model

import (
	"strings"
	"testing"
)

// TestValidateVersionsAndNames checks the supported Kubernetes versions, the limits the names derived from the
// cluster's name put on it, and the control plane's size.
func TestValidateVersionsAndNames(t *testing.T) {
	runValidateCases(t, []validateCase{
		{
			name: "kubernetesVersion older than supported",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.KubernetesVersion = "1.2.3"
				return igs
			},
			want: []wantProblem{{"spec.kubernetesVersion", `"1.2.3" is not supported: kubeup supports Kubernetes 1.31 to 1.34 (the releases whose flags it writes); use for example 1.34.2$`}},
		},
		{
			name: "kubernetesVersion newer than supported",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.KubernetesVersion = "99.0.0"
				return igs
			},
			want: []wantProblem{{"spec.kubernetesVersion", `"99.0.0" is not supported: kubeup supports Kubernetes 1.31 to 1.34`}},
		},
		{
			name: "kubernetesVersion one minor past the newest",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.KubernetesVersion = "v1.35.0"
				return igs
			},
			want: []wantProblem{{"spec.kubernetesVersion", `"v1.35.0" is not supported`}},
		},
		{
			name: "kubernetesVersion one minor before the oldest",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.KubernetesVersion = "1.30.14"
				return igs
			},
			want: []wantProblem{{"spec.kubernetesVersion", `"1.30.14" is not supported`}},
		},
		{
			name: "kubernetesVersion: the oldest and newest supported",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.KubernetesVersion = "v1.31.0"
				return igs
			},
		},
		{
			name: "kubernetesVersion: a prerelease of the newest",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Spec.KubernetesVersion = "1.34.0-rc.1"
				return igs
			},
		},
		{
			name:  "cluster name too long for its etcd members' DNS names",
			cloud: CloudGCE,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Metadata.Name = strings.Repeat("d", 63) + "." + strings.Repeat("e", 63) + "." + strings.Repeat("m", 63) + "." + strings.Repeat("o", 50) + ".com"
				c.Spec.DNSZone = "com"
				c.Spec.API = &APISpec{PublicName: "api.example.com", InternalName: "api.internal.example.com"}
				c.Spec.KubeAPIServer = &KubeAPIServerConfig{ServiceAccountIssuer: "https://api.internal.example.com"}
				return igs
			},
			want: []wantProblem{{"metadata.name", `is too long: the DNS name of etcd member b of events, "b.etcd-events.internal.ddddddddddddddd...oooooooooooooooooooooooooooooooooo.com", would be 269 characters, more than the 253 DNS allows; use a name of at most 230 characters$`}},
		},
		{
			name: "cluster name too long for the local provider's volume names",
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Metadata.Name = strings.Repeat("d", 63) + "." + strings.Repeat("e", 63) + "." + strings.Repeat("m", 60) + ".com"
				c.Spec.DNSZone = "com"
				c.Spec.API = &APISpec{PublicName: "api.example.com", InternalName: "api.internal.example.com"}
				c.Spec.KubeAPIServer = &KubeAPIServerConfig{ServiceAccountIssuer: "https://api.internal.example.com"}
				return igs
			},
			want: []wantProblem{{"metadata.name", `is too long: the volume of etcd member a of events, "a.etcd-events.dddddddddddddddddddddddd...mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm.com", would be 206 characters, more than the 200 the local provider's volumes take; use a name of at most 186 characters$`}},
		},
		{
			name:  "cluster name too long for an AWS tag key",
			cloud: CloudAWS,
			user: func(c *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				c.Metadata.Name = strings.Repeat("d", 63) + "." + strings.Repeat("e", 50) + ".com"
				c.Spec.DNSZone = "com"
				return igs
			},
			want: []wantProblem{{"metadata.name", `the tag key of the cluster's resources, "kubernetes.io/cluster/dddddddddddddddd...eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee.com", would be 140 characters, more than the 128 AWS takes; use a name of at most 106 characters$`}},
		},
		{
			name:     "etcd cluster name too long for its members' DNS label",
			complete: func(c *Cluster, _ []*InstanceGroup) { c.Spec.EtcdClusters[1].Name = strings.Repeat("x", 59) },
			want:     []wantProblem{{"spec.etcdClusters[1].name", "is longer than 58 characters: the members' DNS names hold the label etcd-xxx"}},
		},
		{
			name: "control-plane group of no node",
			complete: func(_ *Cluster, igs []*InstanceGroup) {
				cp := group(igs, "control-plane-b")
				cp.Spec.MinSize, cp.Spec.MaxSize = ptr[int32](0), ptr[int32](0)
			},
			want: []wantProblem{
				{"instancegroup/control-plane-b: spec.minSize", "0: a control-plane group runs its etcd members on its node, so it needs one: set 1"},
				{"instancegroup/control-plane-b: spec.maxSize", "0: a control-plane group runs its etcd members on its node, so it needs one: set 1"},
			},
		},
		{
			name: "instance group with a role that does not exist",
			user: func(_ *Cluster, igs []*InstanceGroup) []*InstanceGroup {
				group(igs, "nodes").Spec.Role = "Bogus"
				return igs
			},
			want: []wantProblem{{"instancegroup/nodes: spec.role", `"Bogus" is not a role: want ControlPlane or Node`}},
		},
	})
}
