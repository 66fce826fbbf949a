package model

import "path"

// Paths of a cluster in the state store, relative to the store's root.

// ConfigPath is the cluster's spec as the user wrote it.
func ConfigPath(cluster string) string { return path.Join(cluster, "config") }

// InstanceGroupPath is an instance group's spec.
func InstanceGroupPath(cluster, ig string) string { return path.Join(cluster, "instancegroup", ig) }

// CompletedSpecPath is the complete spec the last `update cluster --yes` applied.
func CompletedSpecPath(cluster string) string { return path.Join(cluster, "cluster-completed.spec") }

// NodeConfigPath is an instance group's node configuration: one object, the YAML of a NodeConfig after a first
// line "# sha256:<hex of the rest>" (NodeConfig.Encode, DecodeNodeConfigObject). kubeup writes it in one atomic
// write; there is no separate .sha256 object to be out of step with it. It names its role's configuration beside
// it (RoleConfigPath), which it pins by that object's own first line.
func NodeConfigPath(cluster, ig string) string { return path.Join(cluster, "nodeup", ig) }
