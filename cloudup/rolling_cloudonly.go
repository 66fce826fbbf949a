package cloudup

import (
	"context"
	"fmt"
	"strings"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// ReadyMachines are the ids of the groups' machines that their cloud counts as serving.
func ReadyMachines(groups []RollingGroup) map[string]bool {
	ids := map[string]bool{}
	for _, g := range groups {
		for _, i := range g.Instances {
			if i.Ready {
				ids[i.ID] = true
			}
		}
	}
	return ids
}

// ValidateFromCloud is what --cloudonly validates (a RollingCloud's Health.Validate), from what the cloud shows:
// every group has its target of machines serving (notServing says what a machine is not, such as "in
// service"), and every etcd member is held by one of them (members, given the serving machines, says).
func ValidateFromCloud(ctx context.Context, groups []RollingGroup, notServing string,
	members func(context.Context, map[string]bool) ([]MemberHealth, error)) ([]string, error) {
	var problems []string
	for _, g := range groups {
		ready := 0
		for _, i := range g.Instances {
			if i.Ready {
				ready++
				continue
			}
			where := "instance group " + g.Name
			if i.Zone != "" {
				where += ", zone " + i.Zone
			}
			problems = append(problems, fmt.Sprintf("instance %s (%s): not %s", i.ID, where, notServing))
		}
		if int32(ready) < g.Target {
			problems = append(problems, fmt.Sprintf("instance group %s: %d of its %d machines %s", g.Name, ready, g.Target, notServing))
		}
	}
	ms, err := members(ctx, ReadyMachines(groups))
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if !m.Healthy {
			problems = append(problems, fmt.Sprintf("etcd member %s: %s", m, m.Why))
		}
	}
	return problems, nil
}

// HoldTerms are a cloud's words for the --cloudonly member checks: what a member's volume is ("EBS volume"), how
// a volume is held ("attached to"; "claimed by" on the local pool), what holds none ("attached to no instance"),
// what a machine that is not serving is ("in service": "which is not in service"), and what a member without a
// volume lacks ("no EBS volume carries its tag", followed by Key's name of the etcd cluster's tag: nil is
// model.EtcdTagKey).
type HoldTerms struct {
	Volume, HeldBy, HeldByNone, NotServing, NoVolume string
	Key                                              func(etcdCluster string) string
}

// MembersFromVolumes says, for each etcd member of spec, whether its volume (the one of vols whose etcd tag names
// the member) is held by one of the live machines: what --cloudonly takes for a healthy member (a RollingCloud's
// Health.Etcd).
func MembersFromVolumes(spec *model.Cluster, vols []volumetasks.Volume, live map[string]bool, terms HoldTerms) []MemberHealth {
	var out []MemberHealth
	for _, e := range spec.Spec.EtcdClusters {
		for _, m := range e.Members {
			key := model.EtcdTagKey
			if terms.Key != nil {
				key = terms.Key
			}
			mh := MemberHealth{EtcdCluster: e.Name, Member: m.Name, Why: terms.NoVolume + " " + key(e.Name)}
			for _, v := range vols {
				if !strings.HasPrefix(v.Tags[model.EtcdTagKey(e.Name)], m.Name+"/") {
					continue
				}
				switch {
				case v.Holder == nil:
					mh.Why = "its " + terms.Volume + " " + v.ID + " is " + terms.HeldByNone
				case !live[v.Holder.NodeID]:
					mh.Holder = v.Holder.NodeID
					mh.Why = "its " + terms.Volume + " " + v.ID + " is " + terms.HeldBy + " " + v.Holder.NodeID + ", which " + terms.NotServing
				default:
					mh.Holder, mh.Healthy, mh.Why = v.Holder.NodeID, true, ""
				}
				break
			}
			out = append(out, mh)
		}
	}
	return out
}
