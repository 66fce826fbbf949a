package model

import (
	"fmt"
	"strings"
)

// NewClusterOptions are what `kubeup create cluster` asks for.
type NewClusterOptions struct {
	Name          string
	CloudProvider string
	Zones         []string
	// ControlPlaneCount is the number of control-plane nodes; 0 means 1 (the zero value of the options). A
	// command line that can pass 0 must refuse it itself: a cluster without a control plane has no API.
	ControlPlaneCount int
	NodeCount         int // size of the "nodes" group; 0 leaves the group out
	DNSZone           string
	Project           string
	KubernetesVersion string
}

// NewCluster returns the user spec of a new cluster and its instance groups: one control-plane group per
// control-plane node (control-plane-a, control-plane-b, ... spread over the zones in order; with more nodes than
// zones, control-plane-a-1, control-plane-a-2, ...; a zone whose short name another zone shares is named in
// full) and a "nodes" group across every zone. The spec is minimal: what is not set is filled in by Complete.
func NewCluster(o NewClusterOptions) (*Cluster, []*InstanceGroup, error) {
	if err := ValidClusterName(o.Name); err != nil {
		return nil, nil, fmt.Errorf("--name %q: %w", o.Name, err)
	}
	if len(o.Zones) == 0 {
		return nil, nil, fmt.Errorf("--zones is required: the zones to run in, for example a,b,c")
	}
	count := o.ControlPlaneCount
	if count == 0 {
		count = 1
	}
	if count < 0 {
		return nil, nil, fmt.Errorf("--control-plane-count %d: a cluster needs a control plane to run its API and etcd: use 1, 3 or 5", count)
	}
	if o.NodeCount < 0 {
		return nil, nil, fmt.Errorf("--node-count %d: must not be negative", o.NodeCount)
	}
	c := &Cluster{
		APIVersion: APIVersion,
		Kind:       KindCluster,
		Metadata:   ObjectMeta{Name: o.Name},
		Spec: ClusterSpec{
			CloudProvider:     o.CloudProvider,
			Project:           o.Project,
			Zones:             append([]string(nil), o.Zones...),
			KubernetesVersion: o.KubernetesVersion,
			DNSZone:           o.DNSZone,
		},
	}
	var igs []*InstanceGroup
	perZone := map[string]int{}
	for i := range count {
		perZone[o.Zones[i%len(o.Zones)]]++
	}
	short := map[string]int{} // how many zones have each short name
	for _, z := range o.Zones {
		short[shortZone(z)]++
	}
	seen := map[string]int{}
	for i := range count {
		zone := o.Zones[i%len(o.Zones)]
		seen[zone]++
		name := "control-plane-" + shortZone(zone)
		if short[shortZone(zone)] > 1 { // us-central1-a and us-east1-a
			name = "control-plane-" + zone
		}
		if perZone[zone] > 1 {
			name = fmt.Sprintf("%s-%d", name, seen[zone])
		}
		igs = append(igs, newInstanceGroup(name, RoleControlPlane, []string{zone}, 1))
	}
	if o.NodeCount > 0 {
		igs = append(igs, newInstanceGroup("nodes", RoleNode, append([]string(nil), o.Zones...), int32(o.NodeCount)))
	}
	// The names derived from the cluster's must fit too, before the name is used in the state store.
	if msg := derivedNameProblem(o.Name, o.CloudProvider, defaultEtcdClusters(igs)); msg != "" {
		return nil, nil, fmt.Errorf("--name %s", msg)
	}
	return c, igs, nil
}

// shortZone is the part of a zone that tells it from the region's other zones: us-east-1a -> a,
// europe-west1-b -> b, a -> a.
func shortZone(zone string) string {
	if i := strings.LastIndex(zone, "-"); i >= 0 && i < len(zone)-1 {
		zone = zone[i+1:]
	}
	trimmed := strings.TrimLeft(zone, "0123456789")
	if trimmed == "" {
		return zone
	}
	return trimmed
}

func newInstanceGroup(name, role string, zones []string, size int32) *InstanceGroup {
	return &InstanceGroup{
		APIVersion: APIVersion,
		Kind:       KindInstanceGroup,
		Metadata:   ObjectMeta{Name: name},
		Spec:       InstanceGroupSpec{Role: role, Zones: zones, MinSize: &size, MaxSize: &size},
	}
}
