package model

import (
	"path"
	"strings"
)

// Where an etcd member lives on a control-plane node, and how it runs: protokube mounts the member's volume at
// EtcdMountPoint, keeps the member's data in EtcdDataDir on it, and writes EtcdPod to EtcdManifestPath while,
// and only while, the volume is mounted there.

// etcdMountPrefix starts the mount point of every etcd volume: /mnt/master-<volume>, as kops has it.
const etcdMountPrefix = "/mnt/master-"

// EtcdMountPoint is where protokube mounts the etcd volume volumeID: /mnt/master-<volumeID>. volumeID is the
// provider's id of the volume (the volume's name in the local pool, vol-... on aws, the disk's name on gce):
// none of them holds a '/'.
func EtcdMountPoint(volumeID string) string { return etcdMountPrefix + volumeID }

// InEtcdMount reports whether the node path p (absolute and clean) is an etcd volume's mount point or below one:
// what protokube writes outside OwnedNodePath.
func InEtcdMount(p string) bool {
	rest, ok := strings.CutPrefix(p, etcdMountPrefix)
	return ok && rest != "" && path.Clean(p) == p && !strings.HasPrefix(rest, ".")
}

// EtcdDataDir is the member's data directory on its mounted volume: <mountPoint>/data. Not the volume's root:
// the root of a fresh filesystem holds lost+found, which is no etcd data; and a directory of its own that
// exists only on the volume lets the manifest require it (hostPath type Directory), so that kubelet never
// starts etcd on the node's root filesystem when the volume is not mounted. protokube creates it (mode 0700)
// on the mounted volume before it writes the manifest; the member holds data when <dataDir>/member exists.
func EtcdDataDir(mountPoint string) string { return path.Join(mountPoint, "data") }

// EtcdManifestPath is the path of the static-pod manifest of etcd cluster etcdCluster (main, events) on a node
// of nc: etcd-<etcdCluster>.manifest in spec.kubelet.podManifestPath, beside the other components' manifests.
// nc's spec must be complete (as DecodeNodeConfig leaves it).
func EtcdManifestPath(nc *NodeConfig, etcdCluster string) string {
	return path.Join(nc.Cluster.Spec.Kubelet.PodManifestPath, EtcdPodName(etcdCluster)+".manifest")
}

func EtcdPodName(etcdCluster string) string { return "etcd-" + etcdCluster }
