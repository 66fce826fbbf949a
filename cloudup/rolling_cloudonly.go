package cloudup

import (
	"context"
	"fmt"
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
