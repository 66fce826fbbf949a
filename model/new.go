package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MaxEtcdMembers is the most members an etcd cluster of kubeup's may have: 5, which survive the loss of 2. etcd
// advises against more (every write waits for a majority), and so do the specs Validate takes.
const MaxEtcdMembers = 5

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

	// VPC is the VPC of an aws cluster (spec.aws.vpcID).
	VPC string
	// Subnets are an aws cluster's subnets: their ids in the order of Zones (subnet-a,subnet-b), or ZONE=ID pairs
	// in any order (us-east-1b=subnet-b).
	Subnets []string
	// InstanceProfile is the IAM instance profile of every machine of an aws cluster (spec.aws.instanceProfile).
	InstanceProfile string
	// Network is the VPC network of a gce cluster (spec.gce.network).
	Network string
	// Subnetworks are a gce cluster's subnetworks: REGION=NAME pairs, one per region of Zones, or one NAME that
	// every region's subnetwork has (spec.gce.subnetworks).
	Subnetworks []string
	// NodeupURL and NodeupSHA256 are the nodeup an aws or gce cluster's machines fetch (spec.nodeup); left empty,
	// this kubeup build's.
	NodeupURL, NodeupSHA256 string
}

// NewCluster returns the user spec of a new cluster and its instance groups: one control-plane group per
// control-plane node (control-plane-a, control-plane-b, ... spread over the zones in order; with more nodes than
// zones, control-plane-a-1, control-plane-a-2, ...; a zone whose short name another zone shares is named in
// full) and a "nodes" group across every zone. The spec is minimal: what is not set is filled in by Complete.
func NewCluster(o NewClusterOptions) (*Cluster, []*InstanceGroup, error) {
	if err := ValidClusterName(o.Name); err != nil {
		return nil, nil, fmt.Errorf("--name %s: %w", Echo(o.Name), err)
	}
	if len(o.Zones) == 0 {
		return nil, nil, fmt.Errorf("--zones is required: the zones to run in, for example a,b,c")
	}
	for _, z := range o.Zones {
		if !zoneName.MatchString(z) {
			return nil, nil, fmt.Errorf("--zones: %s is not a zone name: lowercase letters, digits and '-', at most 63 (such as us-east-1a, or a for the local provider)", Echo(z))
		}
	}
	count := o.ControlPlaneCount
	if count == 0 {
		count = 1
	}
	if count < 0 {
		return nil, nil, fmt.Errorf("--control-plane-count %d: a cluster needs a control plane to run its API and etcd: use 1, 3 or 5", count)
	}
	if count%2 == 0 || count > MaxEtcdMembers {
		return nil, nil, fmt.Errorf("--control-plane-count %d: use 1, 3 or 5: each control-plane node runs a member of each etcd cluster, "+
			"which needs an odd number of members to keep a quorum, and kubeup runs at most %d", count, MaxEtcdMembers)
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
	if err := setCloudOptions(&c.Spec, o); err != nil {
		return nil, nil, err
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

// setCloudOptions sets the options of one cloud, and refuses those of another: a flag that would be silently
// unused is a mistake to name. Each cloud names its own flags (cloudModel.createFlags) and sets them
// (cloudModel.create).
func setCloudOptions(s *ClusterSpec, o NewClusterOptions) error {
	cloud := o.CloudProvider
	cm, known := cloudModels[cloud]
	for _, name := range slices.Sorted(maps.Keys(cloudModels)) {
		for _, f := range cloudModels[name].createFlags(o) {
			if f.set && (!known || !slices.ContainsFunc(cm.createFlags(o), func(g createFlag) bool { return g.flag == f.flag })) {
				return fmt.Errorf("%s is for --cloud %s, not %s", f.flag, name, cloudName(cloud))
			}
		}
	}
	for _, f := range []createFlag{{"--nodeup-url", o.NodeupURL != ""}, {"--nodeup-sha256", o.NodeupSHA256 != ""}} {
		if f.set && !cm.fetchesNodeup {
			return fmt.Errorf("%s is for the clouds whose machines fetch nodeup at boot (%s), not %s", f.flag, nodeupClouds(), cloudName(cloud))
		}
	}
	if known && cm.create != nil {
		if err := cm.create(s, o); err != nil {
			return err
		}
	}
	if o.NodeupURL != "" || o.NodeupSHA256 != "" {
		s.Nodeup = &NodeupSpec{URL: o.NodeupURL, SHA256: o.NodeupSHA256}
	}
	return nil
}

// A createFlag is a flag of `kubeup create cluster` that belongs to one cloud, and whether it was given.
type createFlag struct {
	flag string
	set  bool
}

func cloudName(cloud string) string {
	if cloud == "" {
		return "a cluster without --cloud"
	}
	return "--cloud " + cloud
}

// parseSubnets reads --subnets: the subnets' ids in the order of zones, or ZONE=ID pairs in any order (not a mix).
// The pairs are returned in the order of zones.
func parseSubnets(args, zones []string) ([]AWSSubnetSpec, error) {
	if len(args) == 0 {
		return nil, nil
	}
	pairs := strings.Contains(args[0], "=")
	var out []AWSSubnetSpec
	for _, a := range args {
		zone, id, isPair := strings.Cut(a, "=")
		if isPair != pairs {
			return nil, fmt.Errorf("--subnets %s: give every subnet as an id (in the order of --zones) or every one as ZONE=ID, not a mix", strings.Join(args, ","))
		}
		if !isPair {
			continue
		}
		if !slices.Contains(zones, zone) {
			return nil, fmt.Errorf("--subnets: %q: zone %q is not one of --zones %s", a, zone, strings.Join(zones, ","))
		}
		if slices.ContainsFunc(out, func(s AWSSubnetSpec) bool { return s.Zone == zone }) {
			return nil, fmt.Errorf("--subnets: zone %q is given twice: one subnet per zone", zone)
		}
		out = append(out, AWSSubnetSpec{Zone: zone, ID: id})
	}
	if pairs {
		slices.SortStableFunc(out, func(a, b AWSSubnetSpec) int { return slices.Index(zones, a.Zone) - slices.Index(zones, b.Zone) })
		return out, nil
	}
	if len(args) != len(zones) {
		return nil, fmt.Errorf("--subnets: %d subnet ids for %d zones (%s): give one subnet per zone, in the order of --zones, or ZONE=ID pairs",
			len(args), len(zones), strings.Join(zones, ","))
	}
	for i, id := range args {
		out = append(out, AWSSubnetSpec{Zone: zones[i], ID: id})
	}
	return out, nil
}

// parseSubnetworks reads --subnetwork: REGION=NAME pairs, one per region of zones, or one NAME for every region.
// The pairs are returned in the order of the zones' regions.
func parseSubnetworks(args, zones []string) ([]GCESubnetworkSpec, error) {
	if len(args) == 0 {
		return nil, nil
	}
	regions := GCERegions(zones)
	if len(args) == 1 && !strings.Contains(args[0], "=") {
		var out []GCESubnetworkSpec
		for _, r := range regions {
			out = append(out, GCESubnetworkSpec{Region: r, Name: args[0]})
		}
		return out, nil
	}
	var out []GCESubnetworkSpec
	for _, a := range args {
		region, name, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("--subnetwork %s: give one subnetwork as REGION=NAME per region of --zones (%s), or a single NAME that every region's subnetwork has",
				strings.Join(args, ","), strings.Join(regions, ","))
		}
		if !slices.Contains(regions, region) {
			return nil, fmt.Errorf("--subnetwork: %q: region %q is not a region of --zones %s (%s)", a, region, strings.Join(zones, ","), strings.Join(regions, ","))
		}
		if slices.ContainsFunc(out, func(s GCESubnetworkSpec) bool { return s.Region == region }) {
			return nil, fmt.Errorf("--subnetwork: region %q is given twice: one subnetwork per region", region)
		}
		out = append(out, GCESubnetworkSpec{Region: region, Name: name})
	}
	slices.SortStableFunc(out, func(a, b GCESubnetworkSpec) int {
		return slices.Index(regions, a.Region) - slices.Index(regions, b.Region)
	})
	return out, nil
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
