package gceprovider

import (
	"context"
	"fmt"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/gcelabels"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// rolling replaces the instances of a gce cluster through their managed instance groups (one per zone of an
// instance group), and tells, from what the cloud shows, whether they serve and where etcd's members are (the
// Health of --cloudonly).
type rolling struct {
	cloud *gcetasks.Cloud
	spec  *model.Cluster
	igs   []*model.InstanceGroup // all of the cluster's
}

var (
	_ cloudup.RollingCloud = (*rolling)(nil)
	_ cloudup.Health       = (*rolling)(nil)
)

// Groups reads the managed instance group of each zone of each instance group: an instance needs an update when
// it was made from another instance template than the one its group makes instances from now (`kubeup update
// cluster --yes` makes a new template for every change of an instance group and points the groups at it).
func (r *rolling) Groups(ctx context.Context, igs []*model.InstanceGroup) ([]cloudup.RollingGroup, error) {
	out := make([]cloudup.RollingGroup, 0, len(igs))
	for _, ig := range igs {
		g := cloudup.RollingGroup{Name: ig.Metadata.Name, ControlPlane: ig.Spec.Role == model.RoleControlPlane}
		if ig.Spec.MinSize != nil {
			g.Min = *ig.Spec.MinSize
		}
		if ig.Spec.MaxSize != nil {
			g.Max = *ig.Spec.MaxSize
		}
		for _, z := range ig.Spec.Zones {
			name := InstanceGroupManagerName(r.spec.Metadata.Name, ig.Metadata.Name, z)
			m, err := r.cloud.ManagedGroup(ctx, z, name)
			if err != nil {
				return nil, err
			}
			if m == nil {
				return nil, fmt.Errorf("instance group %s has no managed instance group %s in zone %s: run `kubeup update cluster %s --yes` first",
					ig.Metadata.Name, name, z, r.spec.Metadata.Name)
			}
			g.Target += int32(m.TargetSize)
			for _, i := range m.Instances {
				ri := cloudup.RollingInstance{Group: g.Name, ControlPlane: g.ControlPlane, ID: i.Name, UID: i.ID, Zone: z, Ready: i.Ready(), Addresses: i.Addresses,
					Ref: instanceRef{zone: z, group: name, url: i.URL}}
				if i.Template != m.Template {
					ri.NeedsUpdate = true
					ri.Reason = fmt.Sprintf("made from instance template %s, the group makes %s", i.Template, m.Template)
				}
				g.Instances = append(g.Instances, ri)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// instanceRef is where Replace finds an instance Groups listed (its RollingInstance's Ref).
type instanceRef struct{ zone, group, url string }

// Replace has the instance's group recreate it from the group's current template (same name, new disk and id).
func (r *rolling) Replace(ctx context.Context, i cloudup.RollingInstance) error {
	ref, ok := i.Ref.(instanceRef)
	if !ok {
		return fmt.Errorf("instance %s (%s): not one the gce provider listed: cannot find its managed instance group", i.ID, i.Group)
	}
	return r.cloud.RecreateInstance(ctx, ref.zone, ref.group, ref.url)
}

// Basis says what the cloud's checks are.
func (r *rolling) Basis() string {
	return "the cloud (--cloudonly): an etcd member counts as healthy when its persistent disk is attached to a RUNNING instance of the cluster's managed instance groups (what protokube claims), not by etcd's own /health"
}

// Etcd reports each member of the spec by its persistent disk (label kubeup-etcd-<etcd cluster>=<member>_...): held
// by the instance it is attached to, healthy when that instance runs in its group.
func (r *rolling) Etcd(ctx context.Context) ([]cloudup.MemberHealth, error) {
	groups, err := r.Groups(ctx, r.igs)
	if err != nil {
		return nil, err
	}
	return r.members(ctx, cloudup.ReadyMachines(groups))
}

// members reads the member disks of the cluster's region (that of its first control-plane zone).
func (r *rolling) members(ctx context.Context, live map[string]bool) ([]cloudup.MemberHealth, error) {
	zone := ""
	for _, ig := range r.igs {
		if ig.Spec.Role == model.RoleControlPlane && len(ig.Spec.Zones) > 0 && zone == "" {
			zone = ig.Spec.Zones[0]
		}
	}
	if zone == "" {
		return nil, fmt.Errorf("cluster %s has no control-plane instance group with a zone: its etcd members' disks cannot be looked for", r.spec.Metadata.Name)
	}
	vols, err := gcetasks.NewDisks(r.cloud.Compute, r.cloud.Project, zone, volumetasks.Holder{}, gcetasks.DisksOptions{}).List(ctx, map[string]string{
		clusterTagPrefix + r.spec.Metadata.Name: "owned",
		model.TagControlPlane:                   "1",
	})
	if err != nil {
		return nil, err
	}
	return cloudup.MembersFromVolumes(r.spec, vols, live, cloudup.HoldTerms{Volume: "disk", HeldBy: "attached to",
		HeldByNone: "attached to no instance", NotServing: "does not run in its group", NoVolume: "no persistent disk carries its label", Key: gcelabels.EtcdLabelKey}), nil
}

// clusterTagPrefix is the key prefix of the cluster's ownership tag (kubernetes.io/cluster/<cluster>=owned), as
// gcetasks encodes it into labels.
const clusterTagPrefix = "kubernetes.io/cluster/"

// Validate checks, from the cloud, that every group has its target of instances running and every etcd member's
// disk is attached to one of them.
func (r *rolling) Validate(ctx context.Context) ([]string, error) {
	groups, err := r.Groups(ctx, r.igs)
	if err != nil {
		return nil, err
	}
	return cloudup.ValidateFromCloud(ctx, groups, "running (or its group is changing it)", r.members)
}
