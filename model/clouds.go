package model

import (
	"maps"
	"slices"
	"strings"
)

// A cloudModel is what defaulting and validation do on one cloud: one value per cloud, in cloudModels under its
// spec.cloudProvider value, beside each cloud's checks (validate_aws.go, validate_gce.go, validate_local.go).
// Complete, Validate and ValidateInstanceGroup ask it, never switch on the cloud's name. (create's flags still
// do: docs/architecture.md, "Providers".)
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
	// hostedZone: the cluster's DNS zone is a hosted zone of the cloud, whose apex the cluster must not be.
	hostedZone bool
	// memberNames are the names the cloud derives from the cluster's name for etcd member m of e, and
	// clusterNames those it derives for the whole cluster: derivedNameProblem checks their lengths.
	memberNames  func(name string, e EtcdClusterSpec, m EtcdMemberSpec) []derived
	clusterNames func(name string) []derived
	// encrypts: the cloud can encrypt an etcd member's volume, and does by default.
	encrypts bool
}

// cloudModels are the clouds the model takes, by spec.cloudProvider.
var cloudModels = map[string]cloudModel{
	CloudAWS: {
		complete: func(s *ClusterSpec) {
			completeAWSRegion(s)
			completeAWS(s)
		},
		machineType: "t3.medium", image: "debian-12-amd64", volumeType: "gp3",
		validate: func(ps *problems, s *ClusterSpec) {
			validateAWSRegionAndZones(ps, s)
			validateAWS(ps, s)
		},
		validateInstanceGroup: validateAWSInstanceGroup,
		volumeTypes:           []string{"gp2", "gp3", "io1", "io2", "st1", "sc1", "standard"},
		fetchesNodeup:         true,
		hostedZone:            true,
		clusterNames: func(name string) []derived {
			return []derived{{"tag key of the cluster's resources", ClusterTagKey(name), maxAWSTagKey, "AWS takes"}}
		},
		encrypts: true,
	},
	CloudGCE: {
		complete:    completeGCE,
		machineType: "e2-standard-2", image: "debian-cloud/debian-12", volumeType: "pd-ssd",
		validate:              validateGCE,
		validateInstanceGroup: func(ps *problems, _ *Cluster, ig *InstanceGroup) { validateGCEInstanceGroup(ps, ig) },
		volumeTypes:           []string{"pd-standard", "pd-balanced", "pd-ssd", "pd-extreme", "hyperdisk-balanced"},
		fetchesNodeup:         true,
		encrypts:              true,
	},
	CloudLocal: {
		complete:    completeLocal,
		machineType: LocalMachineType, image: LocalImage, volumeType: "sparse",
		validate:              validateLocal,
		validateInstanceGroup: func(ps *problems, _ *Cluster, ig *InstanceGroup) { validateLocalInstanceGroup(ps, ig) },
		volumeTypes:           []string{"sparse"},
		memberNames: func(name string, e EtcdClusterSpec, m EtcdMemberSpec) []derived {
			return []derived{{"volume of etcd member " + m.Name + " of " + e.Name,
				EtcdVolumeName(name, e, m), maxLocalVolumeName, "the local provider's volumes take"}}
		},
	},
}

// cloudNames lists the clouds the model takes, for messages: "aws, gce or local".
func cloudNames() string {
	names := slices.Sorted(maps.Keys(cloudModels))
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
