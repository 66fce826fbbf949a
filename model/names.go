package model

import "fmt"

// Names derived from the cluster's name, and their limits. A name that DNS allows may still make a derived name
// too long: the check is made on the names the spec would really derive, before anything is written.

const (
	// maxDNSName is the longest DNS name, in characters (RFC 1035, without the final dot).
	maxDNSName = 253
	// maxLocalVolumeName is the longest volume name the local provider's pool takes (a file name, with room for
	// its suffixes and temporary files).
	maxLocalVolumeName = 200
	// maxAWSTagKey is the longest tag key AWS takes.
	maxAWSTagKey = 128
	// maxEtcdClusterName is the longest etcd cluster name: its members' DNS names hold the label etcd-<name>.
	maxEtcdClusterName = 63 - len("etcd-")
)

// ValidClusterName checks that name is a cluster name: a lowercase DNS name of at least two labels, each at most
// 63 characters, at most 253 in all. It is what must hold before a name is used to find anything in the state
// store; Validate also checks the names derived from it.
func ValidClusterName(name string) error {
	if msg := validDNSName(name, 2); msg != "" {
		return fmt.Errorf("cluster name: %s", msg)
	}
	return nil
}

// ValidInstanceGroupName checks that name is an instance group's name, as Validate does (metadata.name), with a
// message that repeats it quoted and cut (Echo): a name from the command line may hold anything.
func ValidInstanceGroupName(name string) error {
	if !dnsLabel.MatchString(name) {
		return fmt.Errorf("%s is not a valid instance group name: lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit", Echo(name))
	}
	return nil
}

// etcdMemberDNSName is the DNS name protokube publishes for an etcd member: a.etcd-main.internal.<cluster>.
func etcdMemberDNSName(cluster, etcdCluster, member string) string {
	return member + ".etcd-" + etcdCluster + ".internal." + cluster
}

// derived is a name derived from the cluster's name (value), what it is, and the longest it may be (limit,
// which limitName says who sets).
type derived struct {
	what, value string
	limit       int
	limitName   string
}

// derivedNameProblem reports, for a valid DNS name, when a name derived from it would be too long: the etcd
// members' DNS names, and the volume names and tag keys of the cloud. The message names the derived name that
// limits the cluster's name most, and says how long the cluster's name may be.
func derivedNameProblem(name, cloud string, etcdClusters []EtcdClusterSpec) string {
	cm := cloudModels[cloud]
	var all []derived
	for _, e := range etcdClusters {
		for _, m := range e.Members {
			if m.Name == "" || e.Name == "" {
				continue
			}
			all = append(all, derived{"DNS name of etcd member " + m.Name + " of " + e.Name,
				etcdMemberDNSName(name, e.Name, m.Name), maxDNSName, "DNS allows"})
			if cm.memberNames != nil {
				all = append(all, cm.memberNames(name, e, m)...)
			}
		}
	}
	if cm.clusterNames != nil {
		all = append(all, cm.clusterNames(name)...)
	}
	// The derived name that leaves the cluster's name the least room sets its limit.
	var worst *derived
	most := 0
	for i, d := range all {
		if m := d.limit - (len(d.value) - len(name)); worst == nil || m < most {
			worst, most = &all[i], m
		}
	}
	if worst == nil || len(name) <= most {
		return ""
	}
	return fmt.Sprintf("%q is too long: the %s, %q, would be %d characters, more than the %d %s; use a name of at most %d characters",
		name, worst.what, shorten(worst.value), len(worst.value), worst.limit, worst.limitName, most)
}

// shorten keeps a long name readable in a message.
func shorten(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:38] + "..." + s[len(s)-38:]
}
