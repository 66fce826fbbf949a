package cloudup

import (
	"context"
	"fmt"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// gceRolling replaces the instances of a gce cluster through their managed instance groups (one per zone of an
// instance group). It cannot tell etcd's health from the cloud: a rolling update on gce takes its checks from the
// API and etcd (no --cloudonly).
type gceRolling struct {
	cloud *gcetasks.Cloud
	spec  *model.Cluster
}

var _ rollingCloud = (*gceRolling)(nil)

// Groups reads the managed instance group of each zone of each instance group: an instance needs an update when
// it was made from another instance template than the one its group makes instances from now (`kubeup update
// cluster --yes` makes a new template for every change of an instance group and points the groups at it).
func (r *gceRolling) Groups(ctx context.Context, igs []*model.InstanceGroup) ([]RollingGroup, error) {
	out := make([]RollingGroup, 0, len(igs))
	for _, ig := range igs {
		g := RollingGroup{Name: ig.Metadata.Name, ControlPlane: ig.Spec.Role == model.RoleControlPlane}
		if ig.Spec.MinSize != nil {
			g.Min = *ig.Spec.MinSize
		}
		if ig.Spec.MaxSize != nil {
			g.Max = *ig.Spec.MaxSize
		}
		for _, z := range ig.Spec.Zones {
			name := model.GCEInstanceGroupManagerName(r.spec.Metadata.Name, ig.Metadata.Name, z)
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
				ri := RollingInstance{Group: g.Name, ControlPlane: g.ControlPlane, ID: i.Name, UID: i.ID, Zone: z, Ready: i.Ready(), Addresses: i.Addresses,
					zone: z, group: name, url: i.URL}
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

// Replace has the instance's group recreate it from the group's current template (same name, new disk and id).
func (r *gceRolling) Replace(ctx context.Context, i RollingInstance) error {
	return r.cloud.RecreateInstance(ctx, i.zone, i.group, i.url)
}
