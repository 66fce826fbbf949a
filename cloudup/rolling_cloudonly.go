package cloudup

import (
	"context"
	"fmt"
	"strings"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// readyMachines are the ids of the groups' machines that their cloud counts as serving.
func readyMachines(groups []RollingGroup) map[string]bool {
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

// validateFromCloud is what --cloudonly validates, from what the cloud shows: every group has its target of
// machines serving (notServing says what a machine is not, such as "in service"), and every etcd member is held
// by one of them (members, given the serving machines, says).
func validateFromCloud(ctx context.Context, groups []RollingGroup, notServing string,
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
	ms, err := members(ctx, readyMachines(groups))
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

// holdTerms are a cloud's words for the --cloudonly member checks: what a member's volume is ("EBS volume"), how
// a volume is held ("attached to"; "claimed by" on the local pool), what holds none ("attached to no instance"),
// what a machine that is not serving is ("in service": "which is not in service"), and what a member without a
// volume lacks ("no EBS volume carries its tag", followed by key's name of the etcd cluster's tag: nil is
// model.EtcdTagKey).
type holdTerms struct {
	volume, heldBy, heldByNone, notServing, noVolume string
	key                                              func(etcdCluster string) string
}

// membersFromVolumes says, for each etcd member of spec, whether its volume (the one of vols whose etcd tag names
// the member) is held by one of the live machines: what --cloudonly takes for a healthy member.
func membersFromVolumes(spec *model.Cluster, vols []volumetasks.Volume, live map[string]bool, terms holdTerms) []MemberHealth {
	var out []MemberHealth
	for _, e := range spec.Spec.EtcdClusters {
		for _, m := range e.Members {
			key := model.EtcdTagKey
			if terms.key != nil {
				key = terms.key
			}
			mh := MemberHealth{EtcdCluster: e.Name, Member: m.Name, Why: terms.noVolume + " " + key(e.Name)}
			for _, v := range vols {
				if !strings.HasPrefix(v.Tags[model.EtcdTagKey(e.Name)], m.Name+"/") {
					continue
				}
				switch {
				case v.Holder == nil:
					mh.Why = "its " + terms.volume + " " + v.ID + " is " + terms.heldByNone
				case !live[v.Holder.NodeID]:
					mh.Holder = v.Holder.NodeID
					mh.Why = "its " + terms.volume + " " + v.ID + " is " + terms.heldBy + " " + v.Holder.NodeID + ", which " + terms.notServing
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
