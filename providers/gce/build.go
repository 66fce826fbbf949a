package gceprovider

import (
	"fmt"
	"strings"

	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/gcelabels"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// gceRootDiskSizeGB is the size of a gce machine's boot disk (its type is GCE's default: gcetasks.InstanceTemplate
// has no field for it).
const gceRootDiskSizeGB = 20

// LabelInstanceGroup is the label that names a gce machine's instance group (its template's and disks').
const LabelInstanceGroup = "kubeup-instance-group"

// maxGCEInstanceBaseName is the longest base of the instances' names of a managed instance group: GCE adds "-"
// and 4 characters, and instance names are 63 at most.
const maxGCEInstanceBaseName = 58

// maxGCETemplateBaseName is the longest base name of an instance template: its real name adds "-" and 8 hex
// digits of its content's hash (gcetasks.InstanceTemplate).
const maxGCETemplateBaseName = 54

// gceRoles are the roles of the network tags and firewall rules, as they appear in the names.
var gceRoles = map[string]string{model.RoleControlPlane: "control-plane", model.RoleNode: "node"}

// NetworkTag is the network tag of a role's machines: kubeup-<cluster>-control-plane or kubeup-<cluster>-node
// ('.' as '-'; cut with a hash when longer than GCE takes, see gcelabels.ResourceName). The firewall rules
// target and allow machines by it.
func NetworkTag(cluster, role string) string {
	return gcelabels.ResourceName("kubeup-"+cluster+"-"+gceRoles[role], model.MaxGCEName)
}

// FirewallRuleName is the name of one of the cluster's firewall rules: kubeup-<cluster>-<rule>.
func FirewallRuleName(cluster, rule string) string {
	return gcelabels.ResourceName("kubeup-"+cluster+"-"+rule, model.MaxGCEName)
}

// DiskName is the name of an etcd member's disk: its EtcdVolumeName as a GCE name
// (a-etcd-main-gce-example-com).
func DiskName(cluster string, e model.EtcdClusterSpec, m model.EtcdMemberSpec) string {
	return gcelabels.ResourceName(model.EtcdVolumeName(cluster, e, m), model.MaxGCEName)
}

// InstanceTemplateName is the base name of an instance group's template in a region (the template's real
// name adds a hash of its content): <group>-<cluster>, or <group>-<region>-<cluster> for a group whose zones are
// in more than one region (a template names one region's subnetwork).
func InstanceTemplateName(cluster string, ig *model.InstanceGroup, region string) string {
	base := ig.Metadata.Name + "-" + cluster
	if len(model.GCERegions(ig.Spec.Zones)) > 1 {
		base = ig.Metadata.Name + "-" + region + "-" + cluster
	}
	return gcelabels.ResourceName(base, maxGCETemplateBaseName)
}

// InstanceGroupManagerName is the name of an instance group's managed instance group in a zone:
// <group>-<zone>-<cluster>.
func InstanceGroupManagerName(cluster, ig, zone string) string {
	return gcelabels.ResourceName(ig+"-"+zone+"-"+cluster, model.MaxGCEName)
}

// Image is an instance group's spec.image as an instance template takes it: PROJECT/FAMILY is the newest image
// of the family (debian-cloud/debian-12 -> projects/debian-cloud/global/images/family/debian-12), a bare NAME an
// image of the cluster's project, and a projects/... path or URL is taken as it is.
func Image(project, image string) string {
	switch {
	case strings.HasPrefix(image, "projects/") || strings.HasPrefix(image, "https://"):
		return image
	case strings.Contains(image, "/"):
		p, family, _ := strings.Cut(image, "/")
		return "projects/" + p + "/global/images/family/" + family
	default:
		return "projects/" + project + "/global/images/" + image
	}
}

// BuildCloudGraph returns the cloud graph of a complete, valid spec on gce:
//   - the user's network and subnetworks (one per region), checked and never changed (engine.ExistsAndValidates);
//   - the machines' service account (spec.gce.serviceAccount), checked likewise; the instance templates wait for it;
//   - the firewall rules kubeup-<cluster>-<rule> in the network, by the roles' network tags (NetworkTag):
//     the nodes let in every protocol from both roles, the control plane from itself, and from the nodes udp,
//     icmp and tcp but etcd's client and peer ports; both ssh (tcp 22) from spec.gce.sshAccess (when it lists
//     any); the control plane also the API (tcp 443) from spec.gce.apiAccess; and FirewallRules, which deletes
//     the cluster's rules (by their description) that none of these is, once these are made;
//   - one disk per etcd member (DiskName), labelled with gcetasks' encoding of EtcdVolumeTags;
//   - per instance group and region, an instance template (InstanceTemplateName) whose startup script
//     (StartupScript) runs nodeup with the group's node configuration, once that is written, and per zone of
//     the group a managed instance group (InstanceGroupManagerName), the group's minSize spread over its
//     zones (the managed instance groups and templates of groups no longer in the spec are no task: see
//     UnusedGroups);
//   - what every cloud's graph holds: the API's placeholder DNS records, the keystore, the complete spec and the
//     node configurations in the state store.
func BuildCloudGraph(c *model.Cluster, igs []*model.InstanceGroup) (*engine.Graph[*gcetasks.Cloud], error) {
	name := c.Metadata.Name
	s := &c.Spec
	if s.GCE == nil {
		return nil, fmt.Errorf("cluster %s: spec.gce is required", name)
	}
	gs := s.GCE
	g := engine.NewGraph[*gcetasks.Cloud]()
	exists := engine.WithLifecycle(engine.ExistsAndValidates)

	// The user's network.
	network := engine.Add(g, &gcetasks.Network{Name: gs.Network}, exists)
	subnetworks := map[string]*gcetasks.Subnetwork{}
	for _, sn := range gs.Subnetworks {
		subnetworks[sn.Region] = engine.Add(g, &gcetasks.Subnetwork{Name: sn.Name, Region: sn.Region, Network: network, PodCIDR: model.KubenetPodCIDR(s)}, exists)
	}
	// An operator who may not read the account (iam.serviceAccounts.get) is warned that it was not checked.
	account := engine.Add(g, &gcetasks.ServiceAccount{Email: gs.ServiceAccount}, engine.WithLifecycle(engine.WarnIfInsufficientAccess))

	// The firewall rules.
	cp, node := NetworkTag(name, model.RoleControlPlane), NetworkTag(name, model.RoleNode)
	var rules []*gcetasks.FirewallRule
	rule := func(r string, f *gcetasks.FirewallRule) {
		f.Name, f.Network = FirewallRuleName(name, r), network
		rules = append(rules, engine.Add(g, f))
	}
	all := []gcetasks.FirewallAllow{{Protocol: "all"}}
	rule("node-from-cluster", &gcetasks.FirewallRule{SourceTags: []string{cp, node}, TargetTags: []string{node}, Allowed: all})
	rule("control-plane-from-control-plane", &gcetasks.FirewallRule{SourceTags: []string{cp}, TargetTags: []string{cp}, Allowed: all})
	// Nodes reach the control plane on every port but etcd's (clients' and peers'): a node does not talk to
	// etcd, and a node taken over must not reach it.
	var etcdPorts []int32
	for _, e := range s.EtcdClusters {
		etcdPorts = append(etcdPorts, e.ClientPort, e.PeerPort)
	}
	var tcp []string
	for _, r := range cloudgraph.PortRangesWithout(etcdPorts) {
		tcp = append(tcp, fmt.Sprintf("%d-%d", r[0], r[1]))
	}
	rule("control-plane-from-node", &gcetasks.FirewallRule{SourceTags: []string{node}, TargetTags: []string{cp}, Allowed: []gcetasks.FirewallAllow{
		{Protocol: "tcp", Ports: tcp}, {Protocol: "udp"}, {Protocol: "icmp"},
	}})
	// With kubenet a pod's packets leave its node with the pod's address, which no network tag matches: the pod
	// range is let in as the nodes are (etcd's ports closed to it on the control plane).
	if n := s.Networking; n != nil && n.PodNetwork == model.PodNetworkKubenet && n.PodCIDR != "" {
		rule("node-from-pods", &gcetasks.FirewallRule{SourceRanges: []string{n.PodCIDR}, TargetTags: []string{node}, Allowed: all})
		rule("control-plane-from-pods", &gcetasks.FirewallRule{SourceRanges: []string{n.PodCIDR}, TargetTags: []string{cp}, Allowed: []gcetasks.FirewallAllow{
			{Protocol: "tcp", Ports: tcp}, {Protocol: "udp"}, {Protocol: "icmp"},
		}})
	}
	rule("https", &gcetasks.FirewallRule{SourceRanges: gs.APIAccess, TargetTags: []string{cp}, Allowed: []gcetasks.FirewallAllow{
		{Protocol: "tcp", Ports: []string{"443"}},
	}})
	// A rule without sources would let in everyone: no ssh rule without spec.gce.sshAccess.
	if len(gs.SSHAccess) > 0 {
		rule("ssh", &gcetasks.FirewallRule{SourceRanges: gs.SSHAccess, TargetTags: []string{cp, node}, Allowed: []gcetasks.FirewallAllow{
			{Protocol: "tcp", Ports: []string{"22"}},
		}})
	}
	// The cluster's rules that the spec no longer asks for (sshAccess emptied, a rule renamed) are deleted.
	engine.Add(g, &gcetasks.FirewallRules{Cluster: name, Keep: rules})

	// The etcd members' disks.
	for _, e := range s.EtcdClusters {
		for _, m := range e.Members {
			// The ownership labels are gcetasks' to add (gcelabels.ClusterLabels), not the task's.
			tags := model.EtcdVolumeTags(name, e, m)
			delete(tags, model.ClusterTagKey(name))
			labels, err := gcelabels.EncodeTags(tags)
			if err != nil {
				return nil, fmt.Errorf("etcd member %s of %s: %w", m.Name, e.Name, err)
			}
			var size *int64
			if m.VolumeSize != nil {
				size = ptr(int64(*m.VolumeSize))
			}
			engine.Add(g, &gcetasks.Disk{
				Name:   DiskName(name, e, m),
				Zone:   ptr(m.Zone),
				SizeGB: size,
				Type:   m.VolumeType,
				Labels: labels,
			})
		}
	}

	common, err := cloudgraph.AddCommonTasks(g, c, igs, nil)
	if err != nil {
		return nil, err
	}

	// Each instance group's templates and managed instance groups.
	for _, ig := range igs {
		roleTag := cloudgraph.TagNode
		if ig.Spec.Role == model.RoleControlPlane {
			roleTag = model.TagControlPlane
		}
		labels, err := gcelabels.EncodeTags(map[string]string{roleTag: "1"})
		if err != nil {
			return nil, err
		}
		labels[LabelInstanceGroup] = gcelabels.LabelValue(ig.Metadata.Name)
		conf, confSum := common.NodeConfig(ig.Metadata.Name)
		templates := map[string]*gcetasks.InstanceTemplate{}
		for _, region := range model.GCERegions(ig.Spec.Zones) {
			sn := subnetworks[region]
			if sn == nil {
				return nil, fmt.Errorf("instance group %s: region %s has no subnetwork in spec.gce.subnetworks", ig.Metadata.Name, region)
			}
			templates[region] = engine.Add(g, &gcetasks.InstanceTemplate{
				Name:           InstanceTemplateName(name, ig, region),
				MachineType:    ig.Spec.MachineType,
				Image:          Image(s.Project, ig.Spec.Image),
				ServiceAccount: ptr(gs.ServiceAccount),
				Network:        network,
				Subnetwork:     sn,
				Tags:           []string{NetworkTag(name, ig.Spec.Role)},
				Labels:         labels,
				RootDiskSizeGB: ptr(int64(gceRootDiskSizeGB)),
				// kubenet's routes send each node's pod range to its instance, which forwards it to its pods.
				CanIpForward: s.Networking != nil && s.Networking.PodNetwork == model.PodNetworkKubenet,
				// The startup script pins the machines to the configuration the same maker writes (conf): made
				// once the keystore's keypairs are found or issued, as conf's is.
				MakeStartupScript: func() (string, error) {
					sum, err := confSum()
					if err != nil {
						return "", err
					}
					return model.StartupScript(c, ig, sum)
				},
				After: []engine.Task{conf, account},
			})
		}
		sizes := spread(ig.Spec.MinSize, len(ig.Spec.Zones))
		for i, z := range ig.Spec.Zones {
			engine.Add(g, &gcetasks.InstanceGroupManager{
				Name:             InstanceGroupManagerName(name, ig.Metadata.Name, z),
				Zone:             ptr(z),
				TargetSize:       ptr(sizes[i]),
				Template:         templates[model.GCERegion(z)],
				BaseInstanceName: gcelabels.ResourceName(ig.Metadata.Name+"-"+name, maxGCEInstanceBaseName),
			})
		}
	}
	return g, nil
}

// UnusedGroups is what the instance groups removed from the spec of a complete gce cluster leave: their managed
// instance groups and instance templates, by the templates' LabelInstanceGroup. It is no task of the cloud graph:
// an update deletes them once the graph is applied, and its dry run lists each one it will delete.
func UnusedGroups(c *model.Cluster, igs []*model.InstanceGroup) *gcetasks.UnusedGroups {
	u := &gcetasks.UnusedGroups{Cluster: c.Metadata.Name, GroupLabel: LabelInstanceGroup}
	for _, ig := range igs {
		u.Groups = append(u.Groups, gcelabels.LabelValue(ig.Metadata.Name))
		for _, z := range ig.Spec.Zones {
			u.Keep = append(u.Keep, z+"/"+InstanceGroupManagerName(c.Metadata.Name, ig.Metadata.Name, z))
		}
	}
	return u
}

// spread divides total over n zones, the first zones taking one more when it does not divide evenly: 5 over 3 is
// 2, 2, 1.
func spread(total *int32, n int) []int64 {
	out := make([]int64, n)
	if total == nil || n == 0 {
		return out
	}
	for i := range out {
		out[i] = int64(*total) / int64(n)
		if i < int(*total)%n {
			out[i]++
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }
