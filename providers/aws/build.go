package awsprovider

import (
	"fmt"

	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
)

// Sizes of an aws machine's root volume.
const (
	awsRootVolumeSizeGB = 20
	awsRootVolumeType   = "gp3"
)

// TagInstanceGroup names a machine's instance group: a tag of the launch templates and Auto Scaling groups (and
// so of the machines), with cloudgraph.TagNode or model.TagControlPlane.
const TagInstanceGroup = "kubeup.dev/instance-group"

// SecurityGroupName is the name of a role's security group: control-plane.<cluster> or nodes.<cluster>.
func SecurityGroupName(cluster, role string) string {
	if role == model.RoleControlPlane {
		return "control-plane." + cluster
	}
	return "nodes." + cluster
}

// BuildCloudGraph returns the cloud graph of a complete, valid spec on aws:
//   - the user's VPC, subnets and instance profiles, checked and never changed (engine.ExistsAndValidates);
//   - the security groups control-plane.<cluster> and nodes.<cluster>: the nodes let in every protocol from both
//     groups, the control plane from itself, and from the nodes udp, icmp and tcp but etcd's client and peer
//     ports; both ssh (tcp 22) from spec.aws.sshAccess; the control plane also the API (tcp 443) from
//     spec.aws.apiAccess; any other rule kubeup made in them is revoked;
//   - one EBS volume per etcd member (EtcdVolumeName, EtcdVolumeTags);
//   - per instance group, a launch template and an Auto Scaling group <group>.<cluster>, whose user data
//     (UserData) runs nodeup with the group's node configuration, once that is written (the Auto Scaling groups
//     and launch templates of groups no longer in the spec are no task: see UnusedGroups);
//   - what every cloud's graph holds: the API's placeholder DNS records, the keystore, the complete spec and the
//     node configurations in the state store.
func BuildCloudGraph(c *model.Cluster, igs []*model.InstanceGroup) (*engine.Graph[*awstasks.Cloud], error) {
	name := c.Metadata.Name
	s := &c.Spec
	if s.AWS == nil {
		return nil, fmt.Errorf("cluster %s: spec.aws is required", name)
	}
	a := s.AWS
	g := engine.NewGraph[*awstasks.Cloud]()
	exists := engine.WithLifecycle(engine.ExistsAndValidates)
	owned := func(resource string, tags map[string]string) map[string]string {
		out := map[string]string{"Name": resource, model.ClusterTagKey(name): model.TagValueOwned}
		for k, v := range tags {
			out[k] = v
		}
		return out
	}

	// The user's network and instance profiles.
	// Each names the spec's field that names it: its errors say which to fix.
	vpc := engine.Add(g, &awstasks.VPC{ID: a.VPCID, SpecPath: "spec.aws.vpcID", PodCIDR: model.KubenetPodCIDR(s)}, exists)
	subnets := map[string]*awstasks.Subnet{}
	for i, sn := range a.Subnets {
		subnets[sn.Zone] = engine.Add(g, &awstasks.Subnet{ID: sn.ID, SpecPath: model.Index("spec.aws.subnets", i), VPC: vpc, Zone: ptr(sn.Zone)}, exists)
	}
	profiles := map[string]*awstasks.InstanceProfile{}
	for _, role := range []string{model.RoleControlPlane, model.RoleNode} {
		p, path := instanceProfileName(a, role), "spec.aws.instanceProfile"
		if role == model.RoleControlPlane && p != a.InstanceProfile {
			path = "spec.aws.controlPlaneInstanceProfile" // else defaulted from instanceProfile, which is the one to fix
		}
		if profiles[p] == nil {
			profiles[p] = engine.Add(g, &awstasks.InstanceProfile{Name: p, SpecPath: path}, exists)
		}
	}

	// The security groups and their rules.
	groups := map[string]*awstasks.SecurityGroup{}
	for _, role := range []string{model.RoleControlPlane, model.RoleNode} {
		sg := SecurityGroupName(name, role)
		groups[role] = engine.Add(g, &awstasks.SecurityGroup{
			Name: sg, VPC: vpc, Description: ptr(securityGroupDescription(name, role)), Tags: owned(sg, nil),
		})
	}
	short := map[string]string{model.RoleControlPlane: "control-plane", model.RoleNode: "nodes"}
	rules := map[string][]*awstasks.SecurityGroupRule{}
	rule := func(role, name string, r *awstasks.SecurityGroupRule) {
		r.Name, r.Group = groups[role].Name+"/"+name, groups[role]
		rules[role] = append(rules[role], engine.Add(g, r))
	}
	for _, role := range []string{model.RoleControlPlane, model.RoleNode} {
		for _, from := range []string{model.RoleControlPlane, model.RoleNode} {
			if role == model.RoleControlPlane && from == model.RoleNode {
				continue // below: not etcd's ports
			}
			rule(role, "all-from-"+short[from], &awstasks.SecurityGroupRule{Protocol: "-1", SourceGroup: groups[from]})
		}
		for _, cidr := range a.SSHAccess {
			rule(role, "ssh-from-"+cidr, &awstasks.SecurityGroupRule{Protocol: "tcp", FromPort: ptr[int32](22), ToPort: ptr[int32](22), CIDR: ptr(cidr)})
		}
	}
	for _, cidr := range a.APIAccess {
		rule(model.RoleControlPlane, "https-from-"+cidr, &awstasks.SecurityGroupRule{Protocol: "tcp", FromPort: ptr[int32](443), ToPort: ptr[int32](443), CIDR: ptr(cidr)})
	}
	// Nodes reach the control plane on every port but etcd's (clients' and peers'), as kops does: a node does not
	// talk to etcd, and a node taken over must not reach it.
	var etcdPorts []int32
	for _, e := range s.EtcdClusters {
		etcdPorts = append(etcdPorts, e.ClientPort, e.PeerPort)
	}
	for _, r := range cloudgraph.PortRangesWithout(etcdPorts) {
		rule(model.RoleControlPlane, fmt.Sprintf("tcp-%d-%d-from-nodes", r[0], r[1]), &awstasks.SecurityGroupRule{
			Protocol: "tcp", FromPort: ptr(r[0]), ToPort: ptr(r[1]), SourceGroup: groups[model.RoleNode],
		})
	}
	rule(model.RoleControlPlane, "udp-from-nodes", &awstasks.SecurityGroupRule{Protocol: "udp", FromPort: ptr[int32](0), ToPort: ptr[int32](65535), SourceGroup: groups[model.RoleNode]})
	rule(model.RoleControlPlane, "icmp-from-nodes", &awstasks.SecurityGroupRule{Protocol: "icmp", FromPort: ptr[int32](-1), ToPort: ptr[int32](-1), SourceGroup: groups[model.RoleNode]})
	// Each group's ingress: the rules above, and none other of kubeup's (a CIDR removed from the spec is revoked).
	for _, role := range []string{model.RoleControlPlane, model.RoleNode} {
		engine.Add(g, &awstasks.SecurityGroupIngress{Group: groups[role], Rules: rules[role]})
	}

	// The etcd members' volumes.
	for _, e := range s.EtcdClusters {
		for _, m := range e.Members {
			vol := model.EtcdVolumeName(name, e, m)
			engine.Add(g, &awstasks.EBSVolume{
				Name:       vol,
				Zone:       ptr(m.Zone),
				SizeGB:     m.VolumeSize,
				VolumeType: m.VolumeType,
				Encrypted:  m.Encrypted,
				Tags:       owned(vol, model.EtcdVolumeTags(name, e, m)),
			})
		}
	}

	common, err := cloudgraph.AddCommonTasks(g, c, igs, nil)
	if err != nil {
		return nil, err
	}

	// Each instance group's launch template and Auto Scaling group.
	for _, ig := range igs {
		lt := model.LaunchTemplateName(name, ig.Metadata.Name)
		roleTag := cloudgraph.TagNode
		if ig.Spec.Role == model.RoleControlPlane {
			roleTag = model.TagControlPlane
		}
		tags := owned(lt, map[string]string{TagInstanceGroup: ig.Metadata.Name, roleTag: "1"})
		conf, confSum := common.NodeConfig(ig.Metadata.Name)
		template := engine.Add(g, &awstasks.LaunchTemplate{
			Name:             lt,
			Image:            ptr(ig.Spec.Image),
			InstanceType:     ptr(ig.Spec.MachineType),
			InstanceProfile:  profiles[instanceProfileName(a, ig.Spec.Role)],
			SecurityGroups:   []*awstasks.SecurityGroup{groups[ig.Spec.Role]},
			RootVolumeSizeGB: ptr(int32(awsRootVolumeSizeGB)),
			RootVolumeType:   ptr(awsRootVolumeType),
			Tags:             tags,
			// The user data pins the machines to the configuration the same maker writes (conf): made once the
			// keystore's keypairs are found or issued, as conf's is.
			MakeUserData: func() (string, error) {
				sum, err := confSum()
				if err != nil {
					return "", err
				}
				return model.UserData(c, ig, sum)
			},
			After: []engine.Task{conf},
		})
		var zones []*awstasks.Subnet
		for _, z := range ig.Spec.Zones {
			sn := subnets[z]
			if sn == nil {
				return nil, fmt.Errorf("instance group %s: zone %s has no subnet in spec.aws.subnets", ig.Metadata.Name, z)
			}
			zones = append(zones, sn)
		}
		engine.Add(g, &awstasks.AutoScalingGroup{
			Name:           lt,
			MinSize:        ig.Spec.MinSize,
			MaxSize:        ig.Spec.MaxSize,
			Subnets:        zones,
			LaunchTemplate: template,
			Tags:           tags,
		})
	}
	return g, nil
}

// UnusedGroups is what the instance groups removed from the spec of a complete aws cluster leave: their Auto
// Scaling groups and launch templates, by their TagInstanceGroup. It is no task of the cloud graph: an update
// deletes them once the graph is applied, and its dry run lists each one it will delete.
func UnusedGroups(c *model.Cluster, igs []*model.InstanceGroup) *awstasks.UnusedGroups {
	u := &awstasks.UnusedGroups{Cluster: c.Metadata.Name, GroupTag: TagInstanceGroup}
	for _, ig := range igs {
		u.Groups = append(u.Groups, ig.Metadata.Name)
		u.Keep = append(u.Keep, model.LaunchTemplateName(c.Metadata.Name, ig.Metadata.Name))
	}
	return u
}

// instanceProfileName is the instance profile of a role's machines.
func instanceProfileName(a *model.AWSSpec, role string) string {
	if role == model.RoleControlPlane && a.ControlPlaneInstanceProfile != "" {
		return a.ControlPlaneInstanceProfile
	}
	return a.InstanceProfile
}

func securityGroupDescription(cluster, role string) string {
	if role == model.RoleControlPlane {
		return "kubeup: the control plane of cluster " + cluster
	}
	return "kubeup: the nodes of cluster " + cluster
}

func ptr[T any](v T) *T { return &v }
