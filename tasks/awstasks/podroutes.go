package awstasks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// PodRoutes are the tasks that make the VPC carry kubenet's pod network (docs/networking.md): the routes of each
// route table the cluster's instances' subnets use, and the source/destination check of each instance that holds
// a pod range, off.
type PodRoutes struct {
	Tables []*VPCRoutes
	Checks []*SourceDestCheck
	// Unmatched are the addresses, of the routes asked for, that are no running instance of the cluster's: their
	// ranges are routed nowhere (a Node of an instance that is gone, or not the cluster's).
	Unmatched []string
}

// PlanPodRoutes returns the tasks that route each pod range of routes (a CIDR, to the InternalIP of the node
// that holds it) to the cluster's running instance with that private address, in every route table that the
// subnets of the cluster's instances use (the subnet's own table, else the VPC's main one), and turn those
// instances' source/destination check off. podCIDR is the cluster's pod range: only routes inside it are
// kubeup's. It reads the cluster's instances (one DescribeInstances) and its VPC's route tables (one
// DescribeRouteTables), which the tasks' Finds then share in this run: a round with nothing to change makes those
// two calls.
func (c *Cloud) PlanPodRoutes(ctx context.Context, podCIDR string, routes map[string]string) (*PodRoutes, error) {
	instances, err := c.clusterInstances(ctx)
	if err != nil {
		return nil, err
	}
	byIP := map[string]ec2types.Instance{}
	vpcs := map[string]bool{}
	subnets := map[string]bool{}
	for _, i := range instances {
		byIP[aws.ToString(i.PrivateIpAddress)] = i
		vpcs[aws.ToString(i.VpcId)] = true
		subnets[aws.ToString(i.SubnetId)] = true
	}
	plan := &PodRoutes{}
	if len(vpcs) == 0 {
		return plan, nil
	}
	if len(vpcs) > 1 {
		return nil, fmt.Errorf("the cluster's instances run in VPCs %s: kubenet's routes are those of one VPC", strings.Join(slices.Sorted(maps.Keys(vpcs)), ", "))
	}
	vpc := slices.Collect(maps.Keys(vpcs))[0]
	wanted := map[string]string{}
	checked := map[string]bool{}
	for _, dst := range slices.Sorted(maps.Keys(routes)) {
		i, ok := byIP[routes[dst]]
		if !ok {
			plan.Unmatched = append(plan.Unmatched, routes[dst])
			continue
		}
		id := aws.ToString(i.InstanceId)
		wanted[dst] = id
		if !checked[id] {
			checked[id] = true
			plan.Checks = append(plan.Checks, &SourceDestCheck{Instance: id, Enabled: aws.Bool(false)})
		}
	}
	tables, err := c.routeTables(ctx, vpc)
	if err != nil {
		return nil, err
	}
	used, err := tablesOf(vpc, tables, subnets)
	if err != nil {
		return nil, err
	}
	for _, id := range used {
		plan.Tables = append(plan.Tables, &VPCRoutes{RouteTable: id, VPC: vpc, PodCIDR: podCIDR, Routes: maps.Clone(wanted)})
	}
	return plan, nil
}

// tablesOf returns the ids of the route tables of vpc that subnets use, sorted: each subnet's own table, else the
// VPC's main one.
func tablesOf(vpc string, tables []ec2types.RouteTable, subnets map[string]bool) ([]string, error) {
	main := ""
	own := map[string]string{}
	for _, t := range tables {
		for _, a := range t.Associations {
			switch {
			case aws.ToBool(a.Main):
				main = aws.ToString(t.RouteTableId)
			case aws.ToString(a.SubnetId) != "":
				own[aws.ToString(a.SubnetId)] = aws.ToString(t.RouteTableId)
			}
		}
	}
	used := map[string]bool{}
	for sn := range subnets {
		switch {
		case own[sn] != "":
			used[own[sn]] = true
		case main != "":
			used[main] = true
		default:
			return nil, fmt.Errorf("subnet %s of VPC %s has no route table of its own and the VPC shows no main one: kubenet's routes have no table to go to", sn, vpc)
		}
	}
	return slices.Sorted(maps.Keys(used)), nil
}
