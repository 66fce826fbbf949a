package awsprovider

import (
	"context"
	"fmt"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// rolling replaces the machines of an aws cluster through their Auto Scaling groups, and tells, from what
// the cloud shows, whether they serve and where etcd's members are (the Health of --cloudonly).
type rolling struct {
	cloud *awstasks.Cloud
	spec  *model.Cluster
	igs   []*model.InstanceGroup // all of the cluster's
}

var (
	_ cloudup.RollingCloud = (*rolling)(nil)
	_ cloudup.Health       = (*rolling)(nil)
)

// Groups reads the Auto Scaling group of each instance group: a machine needs an update when it was launched
// from another launch template, or another version of it, than the one its group launches now (`kubeup update
// cluster --yes` makes a new version for every change of an instance group and points the group at it).
func (a *rolling) Groups(ctx context.Context, igs []*model.InstanceGroup) ([]cloudup.RollingGroup, error) {
	names := make([]string, len(igs))
	for k, ig := range igs {
		names[k] = model.LaunchTemplateName(a.spec.Metadata.Name, ig.Metadata.Name)
	}
	states, err := a.cloud.Groups(ctx, names)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range states {
		for _, i := range s.Instances {
			ids = append(ids, i.ID)
		}
	}
	addrs, err := a.cloud.InstanceAddresses(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]cloudup.RollingGroup, 0, len(igs))
	for k, ig := range igs {
		s, ok := states[names[k]]
		if !ok {
			return nil, fmt.Errorf("instance group %s has no Auto Scaling group %s: run `kubeup update cluster %s --yes` first",
				ig.Metadata.Name, names[k], a.spec.Metadata.Name)
		}
		g := cloudup.RollingGroup{Name: ig.Metadata.Name, ControlPlane: ig.Spec.Role == model.RoleControlPlane,
			Min: s.Min, Target: s.Desired, Max: s.Max}
		for _, i := range s.Instances {
			ri := cloudup.RollingInstance{Group: g.Name, ControlPlane: g.ControlPlane, ID: i.ID, Zone: i.Zone, Ready: i.InService(), Addresses: addrs[i.ID]}
			switch {
			case i.Template != s.Template:
				ri.NeedsUpdate = true
				ri.Reason = fmt.Sprintf("launched from launch template %s, the group launches %s", i.Template, s.Template)
			case i.Version != s.Version:
				ri.NeedsUpdate = true
				ri.Reason = fmt.Sprintf("launch template version %s (%s), the group launches version %s", i.Version, i.InstanceType, s.Version)
			}
			g.Instances = append(g.Instances, ri)
		}
		out = append(out, g)
	}
	return out, nil
}

// Replace terminates the machine in its Auto Scaling group without lowering the group's desired capacity: the
// group launches its replacement from the current template version.
func (a *rolling) Replace(ctx context.Context, i cloudup.RollingInstance) error {
	return a.cloud.TerminateInGroup(ctx, i.ID)
}

// Basis says what the cloud's checks are.
func (a *rolling) Basis() string {
	return "the cloud (--cloudonly): an etcd member counts as healthy when its EBS volume is attached to an in-service instance of the cluster (what protokube claims), not by etcd's own /health"
}

// Etcd reports each member of the spec by its EBS volume (tag k8s.io/etcd/<etcd cluster>=<member>/...): held by
// the instance it is attached to, healthy when that instance is in service.
func (a *rolling) Etcd(ctx context.Context) ([]cloudup.MemberHealth, error) {
	groups, err := a.Groups(ctx, a.igs)
	if err != nil {
		return nil, err
	}
	return a.members(ctx, cloudup.ReadyMachines(groups))
}

func (a *rolling) members(ctx context.Context, live map[string]bool) ([]cloudup.MemberHealth, error) {
	vols, err := awstasks.NewVolumes(a.cloud.EC2, volumetasks.Holder{}, "", awstasks.VolumesOptions{}).List(ctx, map[string]string{
		awstasks.ClusterTag(a.spec.Metadata.Name): "owned",
		model.TagControlPlane:                     "1",
	})
	if err != nil {
		return nil, err
	}
	return cloudup.MembersFromVolumes(a.spec, vols, live, cloudup.HoldTerms{Volume: "volume", HeldBy: "attached to",
		HeldByNone: "attached to no instance", NotServing: "is not in service", NoVolume: "no EBS volume carries its tag"}), nil
}

// Validate checks, from the cloud, that every group has its target of machines in service and every etcd member's
// volume is attached to one of them.
func (a *rolling) Validate(ctx context.Context) ([]string, error) {
	groups, err := a.Groups(ctx, a.igs)
	if err != nil {
		return nil, err
	}
	return cloudup.ValidateFromCloud(ctx, groups, "in service", a.members)
}
