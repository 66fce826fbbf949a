package model

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"sigs.k8s.io/yaml"
)

// KindNodeRoleConfig is the kind of a role's configuration.
const KindNodeRoleConfig = "NodeRoleConfig"

// NodeRoleConfig is what the node configurations of every instance group of one role share, stored once beside
// them (<cluster>/nodeup/<role>.role, its sha256 on its first line, as a node configuration): the complete
// cluster spec and the keystore's files the role needs. On the control plane these are every etcd member's
// certificates and keys, which grow with the members; stored in each group's configuration, M control-plane
// groups made M copies of them, and a plan's cost grew with the square of the members.
type NodeRoleConfig struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Role       string     `json:"role"`
	Cluster    *Cluster   `json:"cluster"`
	Files      []NodeFile `json:"files,omitempty"`
}

// RoleConfigName is the name of a role's configuration beside the groups' node configurations: ControlPlane.role,
// Node.role. No instance group has such a name (it has a capital and a dot), so the two never meet.
func RoleConfigName(role string) string { return role + ".role" }

// RoleConfigPath is a role's configuration in the state store: <cluster>/nodeup/<role>.role.
func RoleConfigPath(cluster, role string) string {
	return path.Join(cluster, "nodeup", RoleConfigName(role))
}

// NewNodeRoleConfig returns the configuration the groups of role share in a complete, valid spec, with the
// keystore's files from ks (a keypair ks does not hold yet is PendingPEM).
func NewNodeRoleConfig(c *Cluster, role string, ks Issued) (*NodeRoleConfig, error) {
	files, err := nodeFiles(c, role, ks)
	if err != nil {
		return nil, err
	}
	cc := *c
	forNodes(&cc.Spec, &c.Spec, role)
	return &NodeRoleConfig{APIVersion: APIVersion, Kind: KindNodeRoleConfig, Role: role, Cluster: &cc, Files: files}, nil
}

// Encode renders the role's configuration as kubeup stores it: a first line "# sha256:<hex>" holding the sha256
// of the YAML after it.
func (rc *NodeRoleConfig) Encode() ([]byte, error) {
	data, err := yaml.Marshal(rc)
	if err != nil {
		return nil, fmt.Errorf("encoding the configuration of role %s: %w", rc.Role, err)
	}
	return withSumLine(data, sha256Hex(data)), nil
}

// NewGroupNodeConfig returns the node configuration kubeup stores for ig: the group, and its role's
// configuration (roleObj, as NodeRoleConfig.Encode wrote it) named and pinned by its sha256.
func NewGroupNodeConfig(ig *InstanceGroup, roleObj []byte) (*NodeConfig, error) {
	name := RoleConfigName(ig.Spec.Role)
	sum, err := NodeConfigObjectSHA256(name, roleObj)
	if err != nil {
		return nil, err
	}
	nc := &NodeConfig{APIVersion: APIVersion, Kind: KindNodeConfig, InstanceGroup: DeepCopy(ig),
		RoleConfig: &RoleConfigRef{Object: name, SHA256: sum}}
	// As NewNodeConfig: the group's size is the cloud's business, not a node's.
	nc.InstanceGroup.Spec.MinSize, nc.InstanceGroup.Spec.MaxSize = nil, nil
	return nc, nil
}

// RoleObject is the role's configuration a configuration read with DecodeNodeConfigObject was made whole from,
// as kubeup stored it (NodeRoleConfig.Encode); nil for a configuration that holds everything itself. nodeup
// writes it beside the node's own copy of the configuration, where protokube reads both.
func (nc *NodeConfig) RoleObject() ([]byte, error) {
	if nc.RoleConfig == nil {
		return nil, nil
	}
	rc := NodeRoleConfig{APIVersion: nc.APIVersion, Kind: KindNodeRoleConfig, Role: nc.InstanceGroup.Spec.Role, Cluster: nc.Cluster, Files: nc.Files}
	return rc.Encode()
}

// resolveRole makes a configuration that names its role's configuration whole: it checks the name (only the
// group's role's, beside it), reads the object with beside, checks it against the pinned sha256 and its own,
// decodes it strictly, and takes its cluster and files; protokube's configuration is derived as kubeup derives it.
func (nc *NodeConfig) resolveRole(source string, beside ReadBeside) error {
	ref := nc.RoleConfig
	var ps problems
	if nc.InstanceGroup == nil {
		return fmt.Errorf("%s: instanceGroup is required", source)
	}
	role := nc.InstanceGroup.Spec.Role
	if role != RoleControlPlane && role != RoleNode {
		ps.add("instanceGroup.spec.role", "%s is not a role: want %s or %s", Echo(role), RoleControlPlane, RoleNode)
		return ps.err(source)
	}
	if want := RoleConfigName(role); ref.Object != want {
		ps.add("roleConfig.object", "%s, but the configuration of role %s is %q; %s", Echo(ref.Object), role, want, notWritten)
	}
	if !isSHA256Hex(ref.SHA256) {
		ps.add("roleConfig.sha256", "%s: want the sha256 of %s in lower-case hex (its first line); %s", Echo(ref.SHA256), ref.Object, notWritten)
	}
	for _, f := range []struct {
		field string
		set   bool
	}{{"cluster", nc.Cluster != nil}, {"files", nc.Files != nil}, {"protokube", nc.Protokube != nil}} {
		if f.set {
			ps.add(f.field, "set, but a configuration that names its role's configuration (roleConfig) holds none: %s holds the cluster and files, and protokube's is derived; %s", ref.Object, notWritten)
		}
	}
	if err := ps.err(source); err != nil {
		return err
	}
	if beside == nil {
		return fmt.Errorf("%s names its role's configuration %s (roleConfig), which is read from beside it: read the configuration from the state store or from a file with %s next to it", source, ref.Object, ref.Object)
	}
	where, obj, err := beside(ref.Object)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s names its role's configuration %s (roleConfig), which does not exist: `kubeup update cluster --yes` writes both: %w", source, where, err)
	}
	if err != nil {
		return fmt.Errorf("reading %s, the role's configuration %s names: %w", where, source, err)
	}
	rest, sum, err := splitObject(where, obj)
	if err != nil {
		return err
	}
	if sum != ref.SHA256 {
		return &NodeConfigSumError{Source: where, Want: ref.SHA256, Got: sum, PinnedBy: source}
	}
	rc := &NodeRoleConfig{}
	if err := decodeStrict(where, rest, sum, "a role's configuration is a mapping of apiVersion, kind, role, cluster and files", rc); err != nil {
		return err
	}
	if rc.Kind != KindNodeRoleConfig || rc.APIVersion != APIVersion {
		return fmt.Errorf("%s: kind %q, apiVersion %q: want kind %s, apiVersion %s", where, rc.Kind, rc.APIVersion, KindNodeRoleConfig, APIVersion)
	}
	if rc.Role != role {
		ps.add("role", "%s, but %s is of instance group %s, role %s; %s", Echo(rc.Role), source, nc.InstanceGroup.Metadata.Name, role, notWritten)
	}
	if rc.Cluster == nil {
		ps.add("cluster", "missing: a role's configuration holds the complete cluster spec; %s", notWritten)
	}
	if err := ps.err(where); err != nil {
		return err
	}
	nc.Cluster, nc.Files = rc.Cluster, rc.Files
	if role == RoleControlPlane && nc.Cluster.Spec.API != nil { // without, checkDerived says what is missing
		nc.Protokube = newProtokubeConfig(nc.Cluster, nc.InstanceGroup)
	}
	return nil
}
