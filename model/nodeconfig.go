package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/version"
)

// KindNodeConfig is the kind of the configuration nodeup reads.
const KindNodeConfig = "NodeConfig"

// NodeConfig is what a node of one instance group needs to converge: the complete cluster spec, its instance
// group and, on the control plane, protokube's configuration. `kubeup update cluster` writes it to the state
// store (<cluster>/nodeup/<instance group>, its sha256 on its first line); nodeup reads it at boot.
//
// What every group of a role shares (the cluster spec and the keystore's files) kubeup stores once, in the role's
// configuration beside the groups' (NodeRoleConfig, <cluster>/nodeup/<role>.role): a group's stored
// configuration names it in RoleConfig, pinned by its sha256, and holds no Cluster, Files or Protokube. So the
// configurations of M control-plane groups are not M copies of a spec and keystore that grow with the members,
// and a spec change is one changed object in a plan. Read back (DecodeNodeConfigObject), the configuration is
// whole again: Cluster and Files from the role's configuration, Protokube derived. A configuration with no
// RoleConfig holds everything itself (one written by hand, or by a test).
type NodeConfig struct {
	APIVersion    string           `json:"apiVersion"`
	Kind          string           `json:"kind"`
	Cluster       *Cluster         `json:"cluster,omitempty"`
	InstanceGroup *InstanceGroup   `json:"instanceGroup"`
	Protokube     *ProtokubeConfig `json:"protokube,omitempty"`
	// Files are the certificates, keys and kubeconfigs of the cluster's keystore that the node's role needs
	// (see AddKeystoreFiles); nodeup writes them. Those that hold a private key are Sensitive: plans show the
	// configuration without them (RedactNodeConfigObject).
	Files []NodeFile `json:"files,omitempty"`
	// RoleConfig names the role's configuration that holds Cluster and Files, beside this one.
	RoleConfig *RoleConfigRef `json:"roleConfig,omitempty"`
}

// RoleConfigRef names the role's configuration (NodeRoleConfig) in the same directory as a node configuration,
// and the sha256 on its first line: a node uses that object only.
type RoleConfigRef struct {
	// Object is the name of the role's configuration: RoleConfigName of the group's role, nothing else.
	Object string `json:"object"`
	SHA256 string `json:"sha256"`
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
	// Local is the local provider's pool, zone file and DNS provider (cloudProvider local): spec.local of the
	// complete spec, its DNS provider defaulted (zonefile unless the spec chose hosts or rfc2136).
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
	// MetricsPort serves /health and /metrics over plain http, on 127.0.0.1 only.
	MetricsPort int32 `json:"metricsPort,omitempty"`
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
	nc := &NodeConfig{APIVersion: APIVersion, Kind: KindNodeConfig, Cluster: DeepCopy(c), InstanceGroup: DeepCopy(ig)}
	// The group's size is the cloud's business, not a node's: left out, a resize changes no node configuration,
	// so no launch template version, and rolling-update replaces no machine for it (as kops).
	nc.InstanceGroup.Spec.MinSize, nc.InstanceGroup.Spec.MaxSize = nil, nil
	forNodes(&nc.Cluster.Spec, &c.Spec, ig.Spec.Role)
	if ig.Spec.Role == RoleControlPlane {
		nc.Protokube = newProtokubeConfig(c, ig)
	}
	return nc
}

// forNodes sets, in dst (a copy of the complete spec src), what the nodes of role get of src's assets and addons:
// the files and images they install (those with a sha256: NodeConfigAssets), and of the addons what they preload
// (nodeAddons).
func forNodes(dst, src *ClusterSpec, role string) {
	dst.Assets = NodeConfigAssets(src, role)
	dst.Addons = nodeAddons(src.Addons)
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
			MetricsPort: e.MetricsPort,
			Flags:       Flags(e), TagKey: EtcdTagKey(e.Name),
		}
		if len(pe.Flags) == 0 {
			pe.Flags = nil // as protokube reads it back: none is written
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

// AddKeystoreFiles sets the files of the keystore the node's role needs (NodeFile), from what ks holds: what
// `kubeup update cluster` found or issued. A keypair ks does not hold yet (a dry run's) is PendingPEM.
func (nc *NodeConfig) AddKeystoreFiles(ks Issued) error {
	files, err := nodeFiles(nc.Cluster, nc.InstanceGroup.Spec.Role, ks)
	if err != nil {
		return err
	}
	nc.Files = files
	return nil
}

// RedactNodeConfigObject shows a stored node configuration (as Encode wrote it), or a role's configuration
// (NodeRoleConfig.Encode), with the contents of every secret file replaced by (sensitive): what a plan may print.
// A file is secret when it is Sensitive, and also when the flag is missing but its mode or its contents say it
// holds a key (NodeFile.secret): when in doubt, redact. It reads the object leniently (no sha256 or spec check:
// it only shows it); an object that is not YAML is an error that never quotes it.
func RedactNodeConfigObject(obj string) (string, error) {
	first, rest, ok := strings.Cut(obj, "\n")
	if !ok || !strings.HasPrefix(first, nodeConfigSumPrefix) {
		return "", errors.New("not a node configuration: no first line " + nodeConfigSumPrefix + "<hex>")
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	if kind.Kind = encodedKind(rest); kind.Kind == "" {
		if err := yaml.Unmarshal([]byte(rest), &kind); err != nil {
			return "", errors.New("not a node configuration: its YAML does not decode")
		}
	}
	var v any
	var files []NodeFile
	switch kind.Kind {
	case KindNodeRoleConfig:
		var rc NodeRoleConfig
		v = &rc
		if err := yaml.Unmarshal([]byte(rest), &rc); err != nil {
			return "", errors.New("not a role's configuration: its YAML does not decode")
		}
		files = rc.Files
	default:
		var nc NodeConfig
		v = &nc
		if err := yaml.Unmarshal([]byte(rest), &nc); err != nil {
			return "", errors.New("not a node configuration: its YAML does not decode")
		}
		files = nc.Files
	}
	for i := range files {
		if files[i].secret() {
			files[i].Contents = engine.Redacted
		}
	}
	shown, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return first + "\n" + string(shown), nil
}

// nodeConfigSumPrefix starts the first line of a stored node configuration; the sha256 of the rest follows in
// lower-case hex.
const nodeConfigSumPrefix = "# sha256:"

// encodedKind is the kind of a configuration's YAML as Encode writes it: one line "kind: NodeConfig" or "kind:
// NodeRoleConfig" at the start of a line (a top-level key: anything nested or continued is indented). "" when
// there is no such line, or more than one: the YAML is decoded for its kind then. It spares
// RedactNodeConfigObject a decode of the whole YAML before the one into the kind's type (half its cost, and a
// plan redacts every group's configuration).
func encodedKind(doc string) string {
	kind := ""
	for line := range strings.Lines(doc) {
		v, ok := strings.CutPrefix(line, "kind: ")
		if !ok {
			continue
		}
		if kind != "" {
			return ""
		}
		if kind = strings.TrimSpace(v); kind != KindNodeConfig && kind != KindNodeRoleConfig {
			return ""
		}
	}
	return kind
}

// Marshal renders the node configuration as YAML, byte-stable, and its sha256 in hex. What kubeup stores is
// Encode's object, which carries this sha256 on its first line. A configuration that names its role's
// configuration (RoleConfig) is rendered without what that holds: Cluster, Files and Protokube.
func (nc *NodeConfig) Marshal() (data []byte, sha string, err error) {
	v := nc
	if nc.RoleConfig != nil {
		v = &NodeConfig{APIVersion: nc.APIVersion, Kind: nc.Kind, InstanceGroup: nc.InstanceGroup, RoleConfig: nc.RoleConfig}
	}
	data, err = yaml.Marshal(v)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the node configuration: %w", err)
	}
	return data, sha256Hex(data), nil
}

// Encode renders the node configuration as the one object kubeup stores and nodeup reads: a first line
// "# sha256:<hex>" holding the sha256 of everything after it, then the YAML of Marshal. The check travels in
// the same object, written in one atomic write, so no second object can be out of step with it; the first line
// is a YAML comment, and `tail -n +2 FILE | sha256sum` checks the object by hand.
func (nc *NodeConfig) Encode() ([]byte, error) {
	data, sum, err := nc.Marshal()
	if err != nil {
		return nil, err
	}
	return withSumLine(data, sum), nil
}

func withSumLine(data []byte, sum string) []byte {
	obj := make([]byte, 0, len(nodeConfigSumPrefix)+len(sum)+1+len(data))
	obj = append(obj, nodeConfigSumPrefix+sum+"\n"...)
	return append(obj, data...)
}

// NodeConfigSumError is a node configuration whose content does not match the sha256 on its first line, or that
// has no complete first line yet: a copy still being written, a truncated or damaged one. Whether to read it
// again is the caller's choice; trusting it never is. It is also a role's configuration that is not the one the
// node configuration names (PinnedBy): one of the two was read before the other was written again.
type NodeConfigSumError struct {
	// Source names the configuration.
	Source string
	// Want is the sha256 the first line names ("" when there is no complete first line); Got is the sha256 of the
	// content after it.
	Want, Got string
	// PinnedBy, when set, names the node configuration whose roleConfig.sha256 is Want; Got is then the sha256 on
	// Source's first line.
	PinnedBy string
}

func (e *NodeConfigSumError) Error() string {
	switch {
	case e.PinnedBy != "":
		return fmt.Sprintf("%s is %s (its first line), but %s names %s (roleConfig.sha256): the two are not from one `kubeup update cluster` "+
			"(one was read while the other was being written)", e.Source, e.Got, e.PinnedBy, e.Want)
	case e.Want == "":
		return fmt.Sprintf("%s: incomplete: no complete first line %q<sha256> yet (a copy still being written, or truncated)", e.Source, nodeConfigSumPrefix)
	}
	return fmt.Sprintf("%s: content does not match its sha256: the first line says %s, the content after it hashes to %s "+
		"(check by hand: tail -n +2 FILE | sha256sum)", e.Source, e.Want, e.Got)
}

// ReadBeside reads the object name in the directory of the node configuration being decoded (the state store's
// <cluster>/nodeup, or the directory of a local file), and says how errors name it. A missing object is an error
// that wraps fs.ErrNotExist.
type ReadBeside func(name string) (source string, obj []byte, err error)

// DecodeNodeConfigObject reads the object Encode wrote: it checks the content against the sha256 of its first
// line (a mismatch, or no complete first line, is a *NodeConfigSumError), then decodes and validates the rest
// as DecodeNodeConfig does. source names the object in errors. A configuration that names its role's
// configuration (RoleConfig) is made whole from that object, read with beside: it must be the one pinned by the
// configuration's roleConfig.sha256 (else a *NodeConfigSumError), and be whole itself.
func DecodeNodeConfigObject(source string, obj []byte, beside ReadBeside) (*NodeConfig, error) {
	rest, want, err := splitObject(source, obj)
	if err != nil {
		return nil, err
	}
	return decodeNodeConfig(source, rest, want, beside)
}

// splitObject checks a stored object (a first line "# sha256:<hex>", then YAML) and returns what follows its
// first line and the sha256 it states.
func splitObject(source string, obj []byte) (rest []byte, sum string, err error) {
	first, rest, complete := bytes.Cut(obj, []byte("\n"))
	if !complete {
		if isPrefixOfSumLine(first) {
			return nil, "", &NodeConfigSumError{Source: source, Got: sha256Hex(rest)}
		}
		return nil, "", notAnObjectError(source)
	}
	want, ok := strings.CutPrefix(string(first), nodeConfigSumPrefix)
	if !ok || !isSHA256Hex(want) {
		return nil, "", notAnObjectError(source)
	}
	return rest, want, nil
}

// NodeConfigObjectSHA256 returns the sha256 a stored node configuration (Encode's object) states on its first
// line: what identifies the configuration, and what a machine's user data pins it to (nodeup --conf-sha256).
// It does not check the rest against it; DecodeNodeConfigObject does.
func NodeConfigObjectSHA256(source string, obj []byte) (string, error) {
	first, _, _ := bytes.Cut(obj, []byte("\n"))
	sum, ok := strings.CutPrefix(string(first), nodeConfigSumPrefix)
	if !ok || !isSHA256Hex(sum) {
		return "", notAnObjectError(source)
	}
	return sum, nil
}

func notAnObjectError(source string) error {
	return fmt.Errorf("%s: the first line is not %q followed by a sha256 in lower-case hex: this is not a node configuration "+
		"written by this kubeup (an older kubeup kept the sha256 in a separate .sha256 object); write it again with "+
		"`kubeup update cluster --yes`", source, nodeConfigSumPrefix)
}

// isPrefixOfSumLine reports whether b could be the start of a first line still being written.
func isPrefixOfSumLine(b []byte) bool {
	if len(b) <= len(nodeConfigSumPrefix) {
		return strings.HasPrefix(nodeConfigSumPrefix, string(b))
	}
	hexPart := string(b[len(nodeConfigSumPrefix):])
	return strings.HasPrefix(string(b), nodeConfigSumPrefix) && len(hexPart) <= 2*sha256.Size && isLowerHex(hexPart)
}

func isSHA256Hex(s string) bool { return len(s) == 2*sha256.Size && isLowerHex(s) }

func isLowerHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// DecodeNodeConfig reads the YAML of a node configuration strictly (an unknown field is a problem with its
// path), after checking it against wantSHA256 (hex, surrounding space ignored; a mismatch is a
// *NodeConfigSumError), and validates the spec it holds with ValidateInstanceGroup (an *InvalidError with field
// paths): a node converges nothing from a configuration kubeup would not have written. source names the input
// in errors. It must hold everything itself (no RoleConfig); a stored object is read with
// DecodeNodeConfigObject.
func DecodeNodeConfig(source string, data []byte, wantSHA256 string) (*NodeConfig, error) {
	return decodeNodeConfig(source, data, wantSHA256, nil)
}

func decodeNodeConfig(source string, data []byte, wantSHA256 string, beside ReadBeside) (*NodeConfig, error) {
	nc := &NodeConfig{}
	if err := decodeStrict(source, data, wantSHA256, "a node configuration is a mapping of apiVersion, kind, cluster and instanceGroup", nc); err != nil {
		return nil, err
	}
	if nc.Kind != KindNodeConfig || nc.APIVersion != APIVersion {
		return nil, fmt.Errorf("%s: kind %q, apiVersion %q: want kind %s, apiVersion %s", source, nc.Kind, nc.APIVersion, KindNodeConfig, APIVersion)
	}
	if nc.RoleConfig != nil {
		if err := nc.resolveRole(source, beside); err != nil {
			return nil, err
		}
	}
	if nc.Cluster == nil || nc.InstanceGroup == nil {
		return nil, fmt.Errorf("%s: cluster and instanceGroup are required", source)
	}
	// The sha256 shows the file is the one written, not that what wrote it was right: a hand-made or older
	// configuration is held to the rules kubeup applies before it writes one.
	if err := ValidateInstanceGroup(source, nc.Cluster, nc.InstanceGroup); err != nil {
		return nil, err
	}
	// What kubeup derives from that spec is derived again: protokube's configuration whole, and where the files
	// go, with which mode and sensitivity (their contents are the keystore's: no node can derive them).
	if err := checkDerived(source, nc); err != nil {
		return nil, err
	}
	return nc, nil
}

// decodeStrict checks data against wantSHA256 (a mismatch is a *NodeConfigSumError), then decodes its YAML into
// v (a pointer to a struct) strictly: every unknown field or value of the wrong type is a problem with its path.
// shape says what the object must be when it is not a mapping.
func decodeStrict(source string, data []byte, wantSHA256, shape string, v any) error {
	got := sha256Hex(data)
	want := strings.ToLower(strings.TrimSpace(wantSHA256))
	if got != want {
		return &NodeConfigSumError{Source: source, Want: want, Got: got}
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("%s: malformed YAML: %w", source, err)
	}
	var raw any
	if err := json.Unmarshal(js, &raw); err != nil {
		return fmt.Errorf("%s: malformed YAML: %w", source, err)
	}
	if _, ok := raw.(map[string]any); !ok {
		return fmt.Errorf("%s: %s, not %s", source, shape, jsonKind(raw))
	}
	var ps problems
	checkShape("", "", raw, reflect.TypeOf(v), &ps)
	if err := ps.err(source); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	return nil
}

// notWritten ends every problem checkDerived finds. Since the check compares with this binary's derivation, a
// configuration another kubeup version wrote is refused where the derivations differ: a change to
// newProtokubeConfig or nodeFiles must keep what earlier versions wrote acceptable (or the check must learn the
// writer's version), or nodes that run the other version refuse it during an upgrade.
var notWritten = "this object is not what this kubeup (" + version.Version + ") writes from the object's own spec: it was written by hand, or by another kubeup version; " +
	"re-run `kubeup update cluster --yes` with the kubeup whose nodeup runs on this node, to write it again"

// checkDerived refuses a node configuration, valid spec and all, whose other parts are not what kubeup writes
// from that spec (NewNodeConfig, AddKeystoreFiles): protokube's configuration must be newProtokubeConfig's
// exactly (none for a Node group), and every file's path must be one nodeFiles gives the group's role, with
// nodeFiles' mode and Sensitive flag, and given once. protokube would otherwise join a hand-made etcd cluster
// name into a manifest's path, or nodeup write a file anywhere. Problems are an *InvalidError whose paths are
// the object's own (protokube.etcdClusters[0].name, files[3].path).
func checkDerived(source string, nc *NodeConfig) error {
	var ps problems
	s := &nc.Cluster.Spec
	controlPlane := nc.InstanceGroup.Spec.Role == RoleControlPlane
	// What newProtokubeConfig and nodeFiles read; validation leaves them optional, kubeup writes them all.
	for _, part := range []struct {
		field   string
		missing bool
	}{
		{"api", s.API == nil}, {"kubelet", s.Kubelet == nil}, {"kubeProxy", s.KubeProxy == nil},
		{"kubeAPIServer", controlPlane && s.KubeAPIServer == nil},
		{"kubeControllerManager", controlPlane && s.KubeControllerManager == nil},
		{"kubeScheduler", controlPlane && s.KubeScheduler == nil},
	} {
		if part.missing {
			ps.add("cluster.spec."+part.field, "missing: kubeup writes the complete spec; %s", notWritten)
		}
	}
	if err := ps.err(source); err != nil {
		return err
	}

	var want *ProtokubeConfig
	if controlPlane {
		want = newProtokubeConfig(nc.Cluster, nc.InstanceGroup)
	}
	switch {
	case want == nil && nc.Protokube != nil:
		ps.add("protokube", "set, but kubeup writes none for instance group %q (role %s); %s", nc.InstanceGroup.Metadata.Name, nc.InstanceGroup.Spec.Role, notWritten)
	case want != nil && nc.Protokube == nil:
		ps.add("protokube", "missing: kubeup writes protokube's configuration for control-plane instance group %q; %s", nc.InstanceGroup.Metadata.Name, notWritten)
	case want != nil:
		if err := diffDerived(&ps, "protokube", want, nc.Protokube); err != nil {
			return fmt.Errorf("%s: comparing protokube's configuration with what kubeup writes: %w", source, err)
		}
	}

	files, err := nodeFiles(nc.Cluster, nc.InstanceGroup.Spec.Role, Issued{})
	if err != nil {
		return fmt.Errorf("%s: the files kubeup writes for this instance group: %w", source, err)
	}
	written := make(map[string]NodeFile, len(files))
	for _, f := range files {
		written[f.Path] = f
	}
	first := map[string]int{}
	for i, f := range nc.Files {
		p := Index("files", i)
		w, ok := written[f.Path]
		if !ok {
			ps.add(p+".path", "%q is not a file kubeup writes for instance group %q (role %s); %s", f.Path, nc.InstanceGroup.Metadata.Name, nc.InstanceGroup.Spec.Role, notWritten)
			continue
		}
		if j, ok := first[f.Path]; ok {
			// An earlier kubeup listed a file twice when two spec fields named it, with the same contents.
			if g := nc.Files[j]; g.Mode != f.Mode || g.Sensitive != f.Sensitive || g.Contents != f.Contents {
				ps.add(p+".path", "%q is also files[%d].path, with other contents or mode: a file is written once; %s", f.Path, j, notWritten)
			}
			continue
		}
		first[f.Path] = i
		if f.Mode != w.Mode {
			ps.add(p+".mode", "%q, but kubeup writes %s with mode %q; %s", f.Mode, f.Path, w.Mode, notWritten)
		}
		if f.Sensitive != w.Sensitive {
			ps.add(p+".sensitive", "%t, but kubeup writes %s with sensitive %t; %s", f.Sensitive, f.Path, w.Sensitive, notWritten)
		}
	}
	return ps.err(source)
}

// diffDerived adds a problem for every place where got, as JSON, differs from want, under path (in the object's
// own field names): a value that differs, a field or an entry that is missing or extra.
func diffDerived(ps *problems, path string, want, got any) error {
	var w, g any
	for _, v := range []struct {
		from any
		to   *any
	}{{want, &w}, {got, &g}} {
		js, err := json.Marshal(v.from)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(js, v.to); err != nil {
			return err
		}
	}
	diffJSON(ps, path, w, g)
	return nil
}

func diffJSON(ps *problems, path string, want, got any) {
	switch w := want.(type) {
	case map[string]any:
		if g, ok := got.(map[string]any); ok {
			keys := slices.Sorted(maps.Keys(w))
			for k := range g {
				if _, ok := w[k]; !ok {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range slices.Compact(keys) {
				wv, inWant := w[k]
				gv, inGot := g[k]
				switch {
				case !inGot:
					ps.add(path+"."+k, "missing, but kubeup writes %s from this cluster and instance group; %s", shownJSON(wv), notWritten)
				case !inWant:
					ps.add(path+"."+k, "%s, but kubeup writes none there; %s", shownJSON(gv), notWritten)
				default:
					diffJSON(ps, path+"."+k, wv, gv)
				}
			}
			return
		}
	case []any:
		if g, ok := got.([]any); ok {
			for i := range min(len(w), len(g)) {
				diffJSON(ps, Index(path, i), w[i], g[i])
			}
			if len(w) != len(g) {
				ps.add(path, "%s, but kubeup writes %s from this cluster and instance group; %s", entries(len(g)), entries(len(w)), notWritten)
			}
			return
		}
	default:
		if reflect.DeepEqual(want, got) {
			return
		}
	}
	ps.add(path, "%s, but kubeup writes %s from this cluster and instance group; %s", shownJSON(got), shownJSON(want), notWritten)
}

func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return strconv.Itoa(n) + " entries"
}

// shownJSON is v as JSON for a message, cut at 80 bytes.
func shownJSON(v any) string {
	js, err := json.Marshal(v)
	if err != nil {
		return "(a value that does not encode)"
	}
	if len(js) <= 80 {
		return string(js)
	}
	cut := 77
	for cut > 0 && !utf8.RuneStart(js[cut]) {
		cut--
	}
	return string(js[:cut]) + "..."
}
