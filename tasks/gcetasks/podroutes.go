package gcetasks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// PodRoutes are the tasks that make the network carry kubenet's pod network (docs/networking.md).
type PodRoutes struct {
	Routes *NetworkRoutes // nil: the cluster has no running instance
	// Unmatched are the addresses, of the routes asked for, that are no running instance of the cluster's: their
	// ranges are routed nowhere. NotForwarding are the instances routed to whose canIpForward is off (made from
	// a template before kubenet's routes): GCE drops what they would forward until they are made again.
	Unmatched, NotForwarding []string
}

// PlanPodRoutes returns the task that routes each pod range of routes (a CIDR, to the InternalIP of the node that
// holds it) to the cluster's running instance with that address, in the network of the cluster's instances.
// podCIDR is the cluster's pod range. It reads the cluster's instances (one instances.aggregatedList), and the
// task the project's routes (one routes.list): a round with nothing to change makes those two calls.
func (c *Cloud) PlanPodRoutes(ctx context.Context, podCIDR string, routes map[string]string) (*PodRoutes, error) {
	instances, err := c.clusterInstances(ctx)
	if err != nil {
		return nil, err
	}
	plan := &PodRoutes{}
	networks := map[string]bool{}
	byIP := map[string]string{}
	forwards := map[string]bool{}
	for _, in := range instances {
		if len(in.NetworkInterfaces) == 0 {
			continue
		}
		nic := in.NetworkInterfaces[0]
		networks[lastSegment(nic.Network)] = true
		path := instancePath(in.SelfLink)
		byIP[nic.NetworkIP] = path
		forwards[path] = in.CanIpForward
	}
	if len(networks) == 0 {
		return plan, nil
	}
	if len(networks) > 1 {
		return nil, fmt.Errorf("the cluster's instances are on networks %s: kubenet's routes are those of one network", strings.Join(slices.Sorted(maps.Keys(networks)), ", "))
	}
	task := &NetworkRoutes{Network: slices.Collect(maps.Keys(networks))[0], PodCIDR: podCIDR}
	for _, dst := range slices.Sorted(maps.Keys(routes)) {
		path, ok := byIP[routes[dst]]
		if !ok {
			plan.Unmatched = append(plan.Unmatched, routes[dst])
			continue
		}
		if task.Routes == nil {
			task.Routes = map[string]string{}
		}
		task.Routes[dst] = path
		if !forwards[path] && !slices.Contains(plan.NotForwarding, path) {
			plan.NotForwarding = append(plan.NotForwarding, path)
		}
	}
	plan.Routes = task
	return plan, nil
}
