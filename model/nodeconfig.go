package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// KindNodeConfig is the kind of the configuration nodeup reads.
const KindNodeConfig = "NodeConfig"

// NodeConfig is what a node of one instance group needs to converge: the complete cluster spec, its instance
// group and, on the control plane, protokube's configuration. `kubeup update cluster` writes it to the state
// store (<cluster>/nodeup/<instance group>, with its sha256 beside it); nodeup reads it at boot.
type NodeConfig struct {
	APIVersion    string           `json:"apiVersion"`
	Kind          string           `json:"kind"`
	Cluster       *Cluster         `json:"cluster"`
	InstanceGroup *InstanceGroup   `json:"instanceGroup"`
	Protokube     *ProtokubeConfig `json:"protokube,omitempty"`
}

// ProtokubeConfig is what protokube needs on a control-plane node: which volumes hold the etcd members it may
// claim (by their tags), how to run etcd, and which DNS names to publish.
type ProtokubeConfig struct {
	ClusterName   string `json:"clusterName"`
	CloudProvider string `json:"cloudProvider"`
	Zone          string `json:"zone"`
	DNSZone       string `json:"dnsZone"`
	// DNSNames are the names protokube keeps pointing at the control plane: the internal and public API names.
	DNSNames []string `json:"dnsNames"`
	// ClusterTag is the tag every volume of the cluster carries (kubernetes.io/cluster/<name>=owned).
	ClusterTag Tag `json:"clusterTag"`
	// Local is the local provider's pool and zone file (cloudProvider local).
	Local        *LocalSpec             `json:"local,omitempty"`
	EtcdClusters []ProtokubeEtcdCluster `json:"etcdClusters"`
}

// Tag is a key and value on a cloud volume.
type Tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ProtokubeEtcdCluster is one etcd cluster as protokube runs it.
type ProtokubeEtcdCluster struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	Image      string `json:"image"`
	ClientPort int32  `json:"clientPort"`
	PeerPort   int32  `json:"peerPort"`
	// Flags are the cluster-wide etcd flags of the spec; protokube adds the member's own (name, URLs, data dir).
	Flags []string `json:"flags,omitempty"`
	// TagKey is the volume tag that names the member: k8s.io/etcd/<cluster>; its value is "<member>/<all members>".
	TagKey  string                `json:"tagKey"`
	Members []ProtokubeEtcdMember `json:"members"`
}

// ProtokubeEtcdMember is one member and the name of its DNS record (<member>.etcd-<cluster>.internal.<cluster>).
type ProtokubeEtcdMember struct {
	Name          string `json:"name"`
	Zone          string `json:"zone"`
	InstanceGroup string `json:"instanceGroup"`
	VolumeName    string `json:"volumeName"`
	DNSName       string `json:"dnsName"`
}

// Volume tags every etcd volume carries.
const (
	TagControlPlane    = "k8s.io/role/control-plane"
	tagEtcdPrefix      = "k8s.io/etcd/"
	tagClusterPrefix   = "kubernetes.io/cluster/"
	TagValueOwned      = "owned"
	DNSPlaceholderIPv4 = "203.0.113.123" // TEST-NET-3: never routed; protokube replaces it
)

// ClusterTagKey is the tag key marking what a cluster owns: kubernetes.io/cluster/<name>.
func ClusterTagKey(cluster string) string { return tagClusterPrefix + cluster }

// EtcdTagKey is the tag key naming an etcd member: k8s.io/etcd/<etcd cluster>.
func EtcdTagKey(etcdCluster string) string { return tagEtcdPrefix + etcdCluster }

// EtcdVolumeName is the name of a member's volume: a.etcd-main.demo.example.com.
func EtcdVolumeName(cluster string, e EtcdClusterSpec, m EtcdMemberSpec) string {
	return m.Name + ".etcd-" + e.Name + "." + cluster
}

// EtcdVolumeTags are the tags of a member's volume: the member and all members of its etcd cluster
// (k8s.io/etcd/main=a/a,b,c), the control-plane role, and the cluster's ownership.
func EtcdVolumeTags(cluster string, e EtcdClusterSpec, m EtcdMemberSpec) map[string]string {
	names := make([]string, len(e.Members))
	for i, other := range e.Members {
		names[i] = other.Name
	}
	slices.Sort(names)
	return map[string]string{
		EtcdTagKey(e.Name):     m.Name + "/" + strings.Join(names, ","),
		TagControlPlane:        "1",
		ClusterTagKey(cluster): TagValueOwned,
	}
}

// NewNodeConfig returns the node configuration of one instance group of a complete, valid spec.
func NewNodeConfig(c *Cluster, ig *InstanceGroup) *NodeConfig {
	nc := &NodeConfig{APIVersion: APIVersion, Kind: KindNodeConfig, Cluster: deepCopy(c), InstanceGroup: deepCopy(ig)}
	if ig.Spec.Role == RoleControlPlane {
		nc.Protokube = newProtokubeConfig(c, ig)
	}
	return nc
}

func newProtokubeConfig(c *Cluster, ig *InstanceGroup) *ProtokubeConfig {
	name := c.Metadata.Name
	p := &ProtokubeConfig{
		ClusterName:   name,
		CloudProvider: c.Spec.CloudProvider,
		DNSZone:       c.Spec.DNSZone,
		DNSNames:      []string{c.Spec.API.InternalName, c.Spec.API.PublicName},
		ClusterTag:    Tag{Key: ClusterTagKey(name), Value: TagValueOwned},
		Local:         c.Spec.Local,
	}
	if len(ig.Spec.Zones) > 0 {
		p.Zone = ig.Spec.Zones[0]
	}
	for _, e := range c.Spec.EtcdClusters {
		pe := ProtokubeEtcdCluster{
			Name: e.Name, Version: e.Version, Image: e.Image, ClientPort: e.ClientPort, PeerPort: e.PeerPort,
			Flags: Flags(e), TagKey: EtcdTagKey(e.Name),
		}
		for _, m := range e.Members {
			pe.Members = append(pe.Members, ProtokubeEtcdMember{
				Name: m.Name, Zone: m.Zone, InstanceGroup: m.InstanceGroup,
				VolumeName: EtcdVolumeName(name, e, m),
				DNSName:    m.Name + ".etcd-" + e.Name + ".internal." + name,
			})
		}
		p.EtcdClusters = append(p.EtcdClusters, pe)
	}
	return p
}

// Marshal renders the node configuration as YAML, byte-stable, and its sha256 in hex.
func (nc *NodeConfig) Marshal() (data []byte, sha string, err error) {
	data, err = yaml.Marshal(nc)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the node configuration: %w", err)
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]), nil
}

// DecodeNodeConfig reads a node configuration strictly (an unknown field is a problem with its path) and checks
// it against the sha256 that was written beside it (hex, surrounding space ignored). source names the input in
// errors.
func DecodeNodeConfig(source string, data []byte, wantSHA256 string) (*NodeConfig, error) {
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	want := strings.ToLower(strings.TrimSpace(wantSHA256))
	if got != want {
		return nil, fmt.Errorf("%s: sha256 is %s, but %s.sha256 says %q: the file was changed or truncated after kubeup wrote it; run `kubeup update cluster --yes` to write it again", source, got, source, want)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: malformed YAML: %w", source, err)
	}
	var raw any
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("%s: malformed YAML: %w", source, err)
	}
	var ps problems
	checkShape("", "", raw, reflect.TypeOf(NodeConfig{}), &ps)
	if err := ps.err(source); err != nil {
		return nil, err
	}
	nc := &NodeConfig{}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(nc); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if nc.Kind != KindNodeConfig || nc.APIVersion != APIVersion {
		return nil, fmt.Errorf("%s: kind %q, apiVersion %q: want kind %s, apiVersion %s", source, nc.Kind, nc.APIVersion, KindNodeConfig, APIVersion)
	}
	if nc.Cluster == nil || nc.InstanceGroup == nil {
		return nil, fmt.Errorf("%s: cluster and instanceGroup are required", source)
	}
	// The spec was validated by kubeup before it wrote this file, and the sha256 shows it is unchanged.
	return nc, nil
}
