package model

import (
	"maps"
	"slices"
	"strings"
)

// A cloudModel is what defaulting, validation and `create cluster` do on one cloud: one value per cloud,
// registered in cloudModels under its spec.cloudProvider value by the cloud's own file (validate_aws.go,
// validate_gce.go, validate_local.go). Complete, Validate, ValidateInstanceGroup and NewCluster ask it, never
// switch on the cloud's name. The cloud's section of the spec (spec.aws) is an API type, in api.go.
type cloudModel struct {
	// complete fills in the cloud's defaults of a spec.
	complete func(s *ClusterSpec)
	// machineType and image are an instance group's by default; volumeType an etcd member's volume's.
	machineType, image, volumeType string
	// validate adds the cloud's problems of a spec; validateInstanceGroup those of one of its groups.
	validate              func(ps *problems, s *ClusterSpec)
	validateInstanceGroup func(ps *problems, c *Cluster, ig *InstanceGroup)
	// volumeTypes are the types of the cloud's volumes an etcd member may ask for.
	volumeTypes []string
	// fetchesNodeup: the cloud's machines fetch nodeup at boot (spec.nodeup says which).
	fetchesNodeup bool
	// nodeBinaries is the suffix of the node binaries the cloud's machines run, each linking that cloud only
	// (nodeup-aws, protokube-aws: cmd/nodeup-aws, cmd/protokube-aws); "" for the builds without a cloud's SDK
	// (cmd/nodeup, cmd/protokube).
	nodeBinaries string
	// hostedZone: the cluster's DNS zone is a hosted zone of the cloud, whose apex the cluster must not be.
	hostedZone bool
	// memberNames are the names the cloud derives from the cluster's name for etcd member m of e, and
	// clusterNames those it derives for the whole cluster: derivedNameProblem checks their lengths.
	memberNames  func(name string, e EtcdClusterSpec, m EtcdMemberSpec) []derived
	clusterNames func(name string) []derived
	// encrypts: the cloud can encrypt an etcd member's volume, and does by default.
	encrypts bool
	// section is the path of the cloud's own section of the spec ("spec.aws") and set whether s has it: a
	// spec of another cloud must not.
	section string
	set     func(s *ClusterSpec) bool
	// createFlags are the flags of `kubeup create cluster` that are the cloud's (another cloud refuses them),
	// with whether o gives them; create sets the spec's fields from them.
	createFlags func(o NewClusterOptions) []createFlag
	create      func(s *ClusterSpec, o NewClusterOptions) error
}

// cloudModels are the clouds the model takes, by spec.cloudProvider: each cloud's file registers its own.
var cloudModels = map[string]cloudModel{}

// NodeBinary is the name of the node binary name ("nodeup", "protokube") that the machines of a cluster of cloud
// run: the cloud's own build (protokube-aws) where it has one.
func NodeBinary(cloud, name string) string {
	if cm := cloudModels[cloud]; cm.nodeBinaries != "" {
		return name + "-" + cm.nodeBinaries
	}
	return name
}

// nodeupClouds lists the clouds whose machines fetch nodeup, for messages: "aws, gce".
func nodeupClouds() string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(cloudModels)) {
		if cloudModels[name].fetchesNodeup {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// cloudNames lists the clouds the model takes, for messages: "aws, gce or local".
func cloudNames() string {
	names := slices.Sorted(maps.Keys(cloudModels))
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
