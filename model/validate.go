package model

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Validate checks a complete spec (what Complete returns) and reports every problem at once, in an
// *InvalidError whose Source is source. Problems of an instance group have paths starting with
// "instancegroup/<name>: ".
func Validate(source string, c *Cluster, igs []*InstanceGroup) error {
	var ps problems
	validateCluster(&ps, c, igs, true)
	seen := map[string]bool{}
	for _, ig := range igs {
		validateInstanceGroup(&ps, c, ig)
		if name := ig.Metadata.Name; name != "" && seen[name] {
			ps.add(igPrefix(name)+"metadata.name", "%q is used by another instance group", name)
		}
		seen[ig.Metadata.Name] = true
	}
	return ps.err(source)
}

// ValidateInstanceGroup checks one instance group of a complete spec in the context of its cluster, and every
// part of the cluster's spec that a node of the group uses: what Validate checks, except what needs the
// cluster's other instance groups (that each etcd member's group exists, that there is a control plane). It is
// what a node can check of the configuration it was given (nodeup). Problems are reported as Validate does.
func ValidateInstanceGroup(source string, c *Cluster, ig *InstanceGroup) error {
	var ps problems
	validateCluster(&ps, c, []*InstanceGroup{ig}, false)
	validateInstanceGroup(&ps, c, ig)
	return ps.err(source)
}

// igPrefix is the start of the path of an instance group's problems: "instancegroup/<name>: ", the name quoted
// when it is not printable as it is.
func igPrefix(name string) string {
	if name == "" {
		return "instancegroup (unnamed): "
	}
	if len(name) > MaxEcho || strconv.Quote(name) != `"`+name+`"` || strings.ContainsAny(name, " :/") {
		name = Echo(name)
	}
	return "instancegroup/" + name + ": "
}

var (
	machineType = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9._]{0,63}$`)
	dnsLabel    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	zoneName    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	semver      = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
)

// validDNSName reports why name is not a lowercase DNS name of at least minLabels labels, or "".
func validDNSName(name string, minLabels int) string {
	if name == "" {
		return "required"
	}
	if len(name) > 253 {
		return fmt.Sprintf("%s is longer than 253 characters", Echo(name))
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if !dnsLabel.MatchString(l) {
			return fmt.Sprintf("%s is not a valid DNS name: each dot-separated label must be 1-63 lowercase letters, digits or '-', not starting or ending with '-'", Echo(name))
		}
	}
	if len(labels) < minLabels {
		return fmt.Sprintf("%q must have at least %d dot-separated labels (for example demo.example.com)", name, minLabels)
	}
	return ""
}

func inDomain(name, zone string) bool { return name == zone || strings.HasSuffix(name, "."+zone) }

// validateCluster checks the cluster's spec; all says igs are all of its instance groups (else the checks that
// need them all are left out).
func validateCluster(ps *problems, c *Cluster, igs []*InstanceGroup, all bool) {
	name := c.Metadata.Name
	s := &c.Spec
	if msg := validDNSName(name, 2); msg != "" {
		ps.add("metadata.name", "%s", msg)
	} else {
		check(ps, "metadata.name", derivedNameProblem(name, s.CloudProvider, s.EtcdClusters))
	}
	cm, known := cloudModels[s.CloudProvider]
	switch {
	case known:
		cm.validate(ps, s)
	case s.CloudProvider == "":
		ps.add("spec.cloudProvider", "required: %s", cloudNames())
	default:
		ps.add("spec.cloudProvider", "%q is not supported: want %s", s.CloudProvider, cloudNames())
	}
	for _, name := range slices.Sorted(maps.Keys(cloudModels)) {
		if other := cloudModels[name]; name != s.CloudProvider && s.CloudProvider != "" && other.set != nil && other.set(s) {
			ps.add(other.section, "is for cloudProvider %s only, and cloudProvider is %s: remove it", name, s.CloudProvider)
		}
	}
	validateAssets(ps, s)
	validateAddons(ps, s)
	switch {
	case known && cm.fetchesNodeup:
		validateNodeup(ps, s)
	case known && s.Nodeup != nil:
		ps.add("spec.nodeup", "is for the clouds whose machines fetch nodeup at boot (%s); the %s provider does not: remove it", nodeupClouds(), s.CloudProvider)
	}
	if len(s.Zones) == 0 {
		ps.add("spec.zones", "required: at least one zone")
	}
	for i, z := range s.Zones {
		if !zoneName.MatchString(z) {
			ps.add(Index("spec.zones", i), "%q is not a valid zone name: lowercase letters, digits and '-'", z)
		}
		if slices.Index(s.Zones, z) < i {
			ps.add(Index("spec.zones", i), "%q is listed twice", z)
		}
	}
	check(ps, "spec.kubernetesVersion", kubernetesVersionProblem(s.KubernetesVersion))
	zoneOK := validDNSName(s.DNSZone, 1) == ""
	if msg := validDNSName(s.DNSZone, 1); msg != "" {
		ps.add("spec.dnsZone", "%s", msg)
	} else if validDNSName(name, 2) == "" && !inDomain(name, s.DNSZone) {
		ps.add("spec.dnsZone", "%q does not hold the cluster's name %q: use %q or a parent domain of it", s.DNSZone, name, parentDomain(name))
	} else if name == s.DNSZone && cloudModels[s.CloudProvider].hostedZone {
		// A hosted zone's apex holds the zone's own records (its NS and SOA, and often the domain's mail, site and
		// verification TXT records). An aws cluster's names are kept strictly below it, so that no name the
		// cluster owns, publishes or cleans up can ever be the apex. (The local provider's zone file is kubeup's
		// own, and a zone named like the cluster is its usual layout: it is allowed there.)
		ps.add("spec.dnsZone", "%q is the cluster's name: on aws the cluster is named below its hosted zone, never as the zone itself, "+
			"so that nothing the cluster owns is the zone's apex (which holds the zone's NS, SOA and the domain's own records): "+
			"use the parent zone %q, or name the cluster under %q (for example demo.%s)", s.DNSZone, parentDomain(name), s.DNSZone, s.DNSZone)
	}
	checkIf(ps, "spec.configBase", s.ConfigBase, configBaseProblem)
	if s.API != nil {
		for _, f := range []struct{ field, v string }{{"publicName", s.API.PublicName}, {"internalName", s.API.InternalName}} {
			field, v := f.field, f.v
			if msg := validDNSName(v, 2); msg != "" {
				ps.add("spec.api."+field, "%s", msg)
			} else if zoneOK && !inDomain(v, s.DNSZone) {
				ps.add("spec.api."+field, "%q is not in spec.dnsZone %q", v, s.DNSZone)
			}
		}
		if s.API.PublicName != "" && s.API.PublicName == s.API.InternalName {
			ps.add("spec.api.internalName", "must differ from spec.api.publicName %q", s.API.PublicName)
		}
	}
	validateNetworking(ps, s.Networking)
	validateEtcd(ps, s, igs, all)
	validateComponents(ps, c)
	validatePodNetwork(ps, s)
	validateContainerd(ps, s)

	if !all {
		return
	}
	controlPlane := 0
	for _, ig := range igs {
		if ig.Spec.Role == RoleControlPlane {
			controlPlane++
		}
	}
	if controlPlane == 0 {
		ps.add("instancegroups", "no control-plane instance group: add one with spec.role: ControlPlane")
	}
}

func validateNetworking(ps *problems, n *NetworkingSpec) {
	if n == nil {
		ps.add("spec.networking", "required")
		return
	}
	parse := func(field, v string) (netip.Prefix, bool) {
		p, err := netip.ParsePrefix(v)
		switch {
		case v == "":
			ps.add("spec.networking."+field, "required: a CIDR such as 100.64.0.0/10")
		case err != nil:
			ps.add("spec.networking."+field, "%q is not a CIDR: %v", v, err)
		case p.Masked() != p:
			ps.add("spec.networking."+field, "%q has host bits set: use %s", v, p.Masked())
		default:
			return p, true
		}
		return netip.Prefix{}, false
	}
	nonMasq, okN := parse("nonMasqueradeCIDR", n.NonMasqueradeCIDR)
	pod, okP := parse("podCIDR", n.PodCIDR)
	svc, okS := parse("serviceClusterIPRange", n.ServiceClusterIPRange)
	if okP && okS && pod.Overlaps(svc) {
		ps.add("spec.networking.podCIDR", "%s overlaps spec.networking.serviceClusterIPRange %s: pods and services need separate ranges", pod, svc)
	}
	if okN && okP && !within(pod, nonMasq) {
		ps.add("spec.networking.podCIDR", "%s is not inside spec.networking.nonMasqueradeCIDR %s", pod, nonMasq)
	}
	if okN && okS && !within(svc, nonMasq) {
		ps.add("spec.networking.serviceClusterIPRange", "%s is not inside spec.networking.nonMasqueradeCIDR %s", svc, nonMasq)
	}
	if msg := validDNSName(n.ClusterDomain, 1); msg != "" {
		ps.add("spec.networking.clusterDomain", "%s", msg)
	}
	if n.PodNetwork != PodNetworkKubenet && n.PodNetwork != PodNetworkFlannel {
		ps.add("spec.networking.podNetwork", "%q is not a pod network kubeup makes: %s (a bridge per node, routes between nodes; the default: leave the field out) or %s (a bridge per node, VXLAN between nodes) is: docs/networking.md",
			n.PodNetwork, PodNetworkKubenet, PodNetworkFlannel)
	}
}

// validatePodNetwork checks that kube-controller-manager gives each node the range the pod network carries:
// kubenet routes it, flannel's kube subnet manager takes it as the node's flannel subnet.
func validatePodNetwork(ps *problems, s *ClusterSpec) {
	if s.Networking == nil || s.KubeControllerManager == nil {
		return
	}
	why := map[string]string{
		PodNetworkKubenet: "routes each node's pod range, which kube-controller-manager allocates",
		PodNetworkFlannel: "takes each node's flannel subnet from its pod range, which kube-controller-manager allocates (flannel's kube subnet manager)",
	}[s.Networking.PodNetwork]
	if a := s.KubeControllerManager.AllocateNodeCIDRs; why != "" && a != nil && !*a {
		ps.add("spec.kubeControllerManager.allocateNodeCIDRs", "false, but spec.networking.podNetwork %s %s: leave the field out (true)",
			s.Networking.PodNetwork, why)
	}
}

// KubenetPodCIDR is the pod range the cloud routes to the nodes (kubenet's routes on AWS and GCE): the cluster's
// pod range when its pod network is kubenet, else "".
func KubenetPodCIDR(s *ClusterSpec) string {
	if s.Networking == nil || s.Networking.PodNetwork != PodNetworkKubenet {
		return ""
	}
	return s.Networking.PodCIDR
}

func within(inner, outer netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

func validateEtcd(ps *problems, s *ClusterSpec, igs []*InstanceGroup, all bool) {
	if len(s.EtcdClusters) == 0 {
		ps.add("spec.etcdClusters", "required: at least the main etcd cluster")
		return
	}
	names := map[string]bool{}
	ports := map[int32]string{}
	for i, e := range s.EtcdClusters {
		p := Index("spec.etcdClusters", i)
		switch {
		case !dnsLabel.MatchString(e.Name):
			ps.add(p+".name", "%q is not a valid name: lowercase letters, digits and '-'", e.Name)
		case len(e.Name) > maxEtcdClusterName:
			ps.add(p+".name", "%q is longer than %d characters: the members' DNS names hold the label etcd-%s, and a label has at most 63", e.Name, maxEtcdClusterName, e.Name)
		case names[e.Name]:
			ps.add(p+".name", "%q is used by another etcd cluster", e.Name)
		}
		names[e.Name] = true
		if !semver.MatchString(e.Version) {
			ps.add(p+".version", "%q is not a version: want MAJOR.MINOR.PATCH, for example %s", e.Version, DefaultEtcdVersion)
		}
		if e.Image == "" || e.Image != etcdImage(e.Version) { // else a problem of its version
			check(ps, p+".image", imageProblem(e.Image))
		}
		for _, f := range []struct {
			field string
			port  int32
		}{{"clientPort", e.ClientPort}, {"peerPort", e.PeerPort}, {"metricsPort", e.MetricsPort}} {
			field, port := f.field, f.port
			if port < 1 || port > 65535 {
				ps.add(p+"."+field, "%d is not a port: want 1-65535", port)
				continue
			}
			if other, ok := ports[port]; ok {
				ps.add(p+"."+field, "port %d is already %s", port, other)
			}
			ports[port] = p + "." + field
		}
		if e.LogLevel != "" && !slices.Contains([]string{"debug", "info", "warn", "error"}, e.LogLevel) {
			ps.add(p+".logLevel", "%q is not one of debug, info, warn, error", e.LogLevel)
		}
		validateMembers(ps, s, p, e, igs, all)
	}
	if !names["main"] {
		ps.add("spec.etcdClusters", "the main etcd cluster is missing: kube-apiserver keeps its data there")
	}
}

func validateMembers(ps *problems, s *ClusterSpec, p string, e EtcdClusterSpec, igs []*InstanceGroup, all bool) {
	switch n := len(e.Members); {
	case n == 0 && all && !slices.ContainsFunc(igs, func(ig *InstanceGroup) bool { return ig.Spec.Role == RoleControlPlane }):
		// The members are made one per ControlPlane group: "instancegroups: no control-plane instance group"
		// says what to fix, once, rather than a member list the spec may never have written.
	case n == 0:
		ps.add(p+".members", "required: 1, 3 or 5 members")
	case n > MaxEtcdMembers:
		ps.add(p+".members", "%d members (one per ControlPlane instance group when the spec leaves them out): kubeup runs 1, 3 or 5; "+
			"more slow every write and survive no more failures than etcd's guidance asks for: use 5", n)
	case n%2 == 0:
		ps.add(p+".members", "%d members: etcd needs an odd number to keep a quorum; use %d or %d", n, n-1, n+1)
	}
	memberNames := map[string]bool{}
	groups := map[string]string{}
	for j, m := range e.Members {
		mp := Index(p+".members", j)
		switch {
		case !dnsLabel.MatchString(m.Name):
			ps.add(mp+".name", "%q is not a valid member name: lowercase letters, digits and '-'", m.Name)
		case memberNames[m.Name]:
			ps.add(mp+".name", "%q is used by another member of %s", m.Name, e.Name)
		}
		memberNames[m.Name] = true
		ig := findInstanceGroup(igs, m.InstanceGroup)
		switch {
		case m.InstanceGroup == "":
			ps.add(mp+".instanceGroup", "required: the control-plane instance group that runs this member")
		case ig == nil && !all: // another instance group's member: not known here
		case ig == nil:
			ps.add(mp+".instanceGroup", "instance group %q does not exist: create it or name one of %v", m.InstanceGroup, controlPlaneGroups(igs))
		case ig.Spec.Role != RoleControlPlane:
			ps.add(mp+".instanceGroup", "instance group %q has role %s: etcd members run on ControlPlane groups", m.InstanceGroup, ig.Spec.Role)
		case groups[m.InstanceGroup] != "":
			ps.add(mp+".instanceGroup", "instance group %q already runs member %q of %s: each member needs its own group", m.InstanceGroup, groups[m.InstanceGroup], e.Name)
		}
		if m.InstanceGroup != "" {
			groups[m.InstanceGroup] = m.Name
		}
		switch {
		case m.Zone == "" && ig == nil && !all:
		case m.Zone == "" && ig != nil && len(ig.Spec.Zones) > 1:
			ps.add(mp+".zone", "required: the zone of the member's volume (the instance group has more than one zone)")
		case m.Zone == "":
			ps.add(mp+".zone", "required: the zone of the member's volume")
		case !slices.Contains(s.Zones, m.Zone):
			ps.add(mp+".zone", "%q is not one of spec.zones %v", m.Zone, s.Zones)
		case ig != nil && !slices.Contains(ig.Spec.Zones, m.Zone):
			ps.add(mp+".zone", "%q is not a zone of instance group %q %v", m.Zone, ig.Metadata.Name, ig.Spec.Zones)
		}
		if m.VolumeSize != nil && *m.VolumeSize < 1 {
			ps.add(mp+".volumeSize", "%d GiB: must be at least 1", *m.VolumeSize)
		}
		if m.VolumeType != nil {
			validateVolumeType(ps, mp+".volumeType", s.CloudProvider, *m.VolumeType)
		}
		if cm, ok := cloudModels[s.CloudProvider]; ok && !cm.encrypts && m.Encrypted != nil && *m.Encrypted {
			ps.add(mp+".encrypted", "the %s provider cannot encrypt volumes: set false or leave it out", s.CloudProvider)
		}
	}
}

func validateVolumeType(ps *problems, p, cloud, t string) {
	valid := cloudModels[cloud].volumeTypes
	if valid != nil && !slices.Contains(valid, t) {
		ps.add(p, "%q is not a volume type of %s: want one of %v", t, cloud, valid)
	}
}

func controlPlaneGroups(igs []*InstanceGroup) []string {
	var names []string
	for _, ig := range igs {
		if ig.Spec.Role == RoleControlPlane {
			names = append(names, ig.Metadata.Name)
		}
	}
	slices.Sort(names)
	return names
}

func validateInstanceGroup(ps *problems, c *Cluster, ig *InstanceGroup) {
	name := ig.Metadata.Name
	p := igPrefix(name)
	if name == "" {
		ps.add(p+"metadata.name", "required")
	} else if !dnsLabel.MatchString(name) {
		ps.add(p+"metadata.name", "%q is not a valid name: lowercase letters, digits and '-', at most 63", name)
	}
	s := &ig.Spec
	switch s.Role {
	case RoleControlPlane, RoleNode:
	case "":
		ps.add(p+"spec.role", "required: ControlPlane or Node")
	default:
		ps.add(p+"spec.role", "%q is not a role: want ControlPlane or Node", s.Role)
	}
	if len(s.Zones) == 0 {
		ps.add(p+"spec.zones", "required: at least one of spec.zones %v", c.Spec.Zones)
	}
	if s.Role == RoleControlPlane && len(s.Zones) > 1 {
		ps.add(p+"spec.zones", "a control-plane group has one zone (its etcd volumes are zonal), not %d: split it into one group per zone", len(s.Zones))
	}
	for i, z := range s.Zones {
		if !slices.Contains(c.Spec.Zones, z) {
			ps.add(p+Index("spec.zones", i), "%q is not one of the cluster's spec.zones %v", z, c.Spec.Zones)
		}
	}
	switch {
	case s.MachineType == "":
		ps.add(p+"spec.machineType", "required")
	case !machineType.MatchString(s.MachineType):
		ps.add(p+"spec.machineType", "%q is not a machine type: want letters, digits, '.', '_' and '-', at most 64 (for example t3.medium)", s.MachineType)
	}
	switch {
	case s.Image == "":
		ps.add(p+"spec.image", "required")
	case len(s.Image) > 255 || strings.ContainsFunc(s.Image, func(r rune) bool { return r < 0x20 || r == 0x7f }) || systemdText(s.Image) != nil:
		ps.add(p+"spec.image", "%q is not a machine image: want at most 255 printable characters", s.Image)
	}
	switch {
	case s.MinSize != nil && *s.MinSize < 0:
		ps.add(p+"spec.minSize", "%d: must not be negative", *s.MinSize)
	case s.Role == RoleControlPlane && s.MinSize != nil && *s.MinSize < 1:
		ps.add(p+"spec.minSize", "%d: a control-plane group runs its etcd members on its node, so it needs one: set 1", *s.MinSize)
	}
	if s.Role == RoleControlPlane && s.MaxSize != nil && *s.MaxSize < 1 {
		ps.add(p+"spec.maxSize", "%d: a control-plane group runs its etcd members on its node, so it needs one: set 1", *s.MaxSize)
	}
	if s.MinSize != nil && s.MaxSize != nil && *s.MaxSize < *s.MinSize {
		ps.add(p+"spec.maxSize", "%d is smaller than spec.minSize %d", *s.MaxSize, *s.MinSize)
	}
	if cm, ok := cloudModels[c.Spec.CloudProvider]; ok {
		cm.validateInstanceGroup(ps, c, ig)
	}
}

// ParseVersion returns the major, minor and patch numbers of a version such as 1.34.2 or v1.34.2.
func ParseVersion(v string) (major, minor, patch int, err error) {
	m := semver.FindStringSubmatch(v)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("%q is not a version: want MAJOR.MINOR.PATCH", v)
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	patch, _ = strconv.Atoi(m[3])
	return major, minor, patch, nil
}

// NodeRunsProtokube reports whether the nodes of role run protokube: the control plane always; a Node (a worker)
// on the local provider when its pod network is kubenet and the cluster allocates the Nodes' pod ranges
// (spec.kubeControllerManager.allocateNodeCIDRs): there no cloud routes the ranges, and each node keeps its own
// routes to the other nodes' (protokube's node round, docs/networking.md). On AWS and GCE the cloud's routes,
// which the control plane keeps, cover the workers: they run no protokube.
func NodeRunsProtokube(s *ClusterSpec, role string) bool {
	if role == RoleControlPlane {
		return true
	}
	kcm := s.KubeControllerManager
	return role == RoleNode && s.CloudProvider == CloudLocal && KubenetPodCIDR(s) != "" &&
		kcm != nil && kcm.AllocateNodeCIDRs != nil && *kcm.AllocateNodeCIDRs
}
