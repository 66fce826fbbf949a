package awstasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// deletePoll is how often DeleteOwned looks again at what it waits for (a group's instances to end, a volume to
// be detached, a security group no longer in use), and deleteWait how long it waits in all: the things of one
// kind are deleted, and waited for, at once, and every wait of one DeleteOwned shares one deadline.
var (
	deletePoll = 2 * time.Second
	deleteWait = 10 * time.Minute
	// deleteReport is how often a wait says, as a warning, what it waits for and why (a group still in use,
	// with the rule that uses it): a delete blocked for minutes must not look hung.
	deleteReport = 30 * time.Second
)

// DeleteOwned deletes what the cluster owns, found by the tag kubernetes.io/cluster/<Cluster>=owned, in an
// order that lets each delete succeed:
//
//  1. the Auto Scaling groups, with their instances (ForceDelete), waiting until each group is gone;
//  2. the instances that carry the ownership tag but are in none of those groups (launched by hand from a
//     template, or detached from their group): terminated;
//  3. the launch templates;
//  4. the security groups, once the rules by which they refer to each other are revoked;
//  5. the EBS volumes, each once it is detached (the instances of the groups end; a volume still attached after a
//     while is an error that names the instance);
//  6. the DNS records (A, AAAA, CNAME, TXT) of the names in records: the fully qualified names kubeup and
//     protokube publish for the cluster (model.PublishedDNSNames). Nothing else in the zone is touched, whatever
//     its name: a record the user or another tool (external-dns) made under the cluster's name stays.
//
// Before them go the routes of the VPC's route tables whose target is one of the cluster's instances (kubenet's,
// VPCRoutes), which would be left as blackholes in the user's tables ("VPCRoute/<route table>/<destination>").
//
// It returns the keys of what it deleted, in that order (sorted within each kind), in the form tasks use
// ("AutoScalingGroup/nodes.demo.example.com", "Instance/i-0123456789abcdef0", "EBSVolume/a.etcd-main.demo.example.com",
// "DNSRecord/api.demo.example.com/A"). Without apply it deletes nothing and returns what it would delete.
// Nothing without the tag is touched (the VPC, the subnets, the instance profiles stay), and no record but those
// of records. A failure to delete one
// thing does not stop the others; the failures are returned, joined, with the keys of what was deleted.
func (c *Cloud) DeleteOwned(ctx context.Context, records []string, apply bool) ([]string, error) {
	c.NewRun()
	defer c.NewRun()
	deadline := time.Now().Add(deleteWait)
	var deleted []string
	var errs []error
	// record deletes the things of one kind at once (each waiting as it must, until deadline), and records their
	// keys in order.
	record := func(kind string, names []string, del func(string) error) {
		slices.Sort(names)
		failed := make([]error, len(names))
		if apply {
			var wg sync.WaitGroup
			for i, name := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					failed[i] = del(name)
				}()
			}
			wg.Wait()
		}
		for i, name := range names {
			key := kind + "/" + name
			if failed[i] != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, failed[i]))
				continue
			}
			deleted = append(deleted, key)
		}
	}

	routes, err := c.routesToClusterInstances(ctx)
	if err != nil {
		return nil, err
	}
	record("VPCRoute", mapKeys(routes), func(key string) error {
		r := routes[key]
		_, err := c.EC2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(r.table), DestinationCidrBlock: aws.String(r.dst)})
		if ErrorCode(err) == "InvalidRoute.NotFound" {
			return nil
		}
		return Classify("deleting the route to "+r.dst+" in route table "+r.table, err)
	})

	groups, err := c.autoScalingGroups(ctx)
	if err != nil {
		return nil, err
	}
	strays, err := c.strayInstances(ctx, groups) // listed before the groups go: their instances then end too
	if err != nil {
		return nil, err
	}
	record("AutoScalingGroup", mapKeys(groups), func(name string) error { return c.deleteAutoScalingGroup(ctx, deadline, name) })
	record("Instance", strays, func(id string) error { return c.terminateInstance(ctx, id) })

	templates, err := c.launchTemplates(ctx)
	if err != nil {
		return deleted, errors.Join(append(errs, err)...)
	}
	record("LaunchTemplate", mapKeys(templates), func(name string) error {
		_, err := c.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: templates[name].template.LaunchTemplateId})
		if ErrorCode(err) == "InvalidLaunchTemplateId.NotFound" || ErrorCode(err) == "InvalidLaunchTemplateName.NotFoundException" {
			return nil
		}
		return Classify("deleting launch template "+name, err)
	})

	sgs, err := c.securityGroups(ctx)
	if err != nil {
		return deleted, errors.Join(append(errs, err)...)
	}
	byName := map[string]ec2types.SecurityGroup{}
	for _, sg := range sgs {
		byName[aws.ToString(sg.GroupName)] = sg
	}
	if apply {
		errs = append(errs, c.revokeCrossReferences(ctx, sgs)...)
	}
	record("SecurityGroup", mapKeys(byName), func(name string) error { return c.deleteSecurityGroup(ctx, deadline, byName[name]) })

	vols, err := c.volumes(ctx)
	if err != nil {
		return deleted, errors.Join(append(errs, err)...)
	}
	// A volume already being deleted is left to it.
	live := map[string][]ec2types.Volume{}
	for name, vs := range vols {
		for _, v := range vs {
			if v.State != ec2types.VolumeStateDeleting && v.State != ec2types.VolumeStateDeleted {
				live[name] = append(live[name], v)
			}
		}
	}
	record("EBSVolume", mapKeys(live), func(name string) error {
		var errs []error
		for _, v := range live[name] {
			errs = append(errs, c.deleteVolume(ctx, deadline, name, v))
		}
		return errors.Join(errs...)
	})

	if c.dnsZone != "" && len(records) > 0 {
		published := map[string]bool{}
		for _, n := range records {
			published[dnstasks.CanonicalName(n)] = true
		}
		sets, err := c.DNSProvider().List(ctx)
		if err != nil {
			return deleted, errors.Join(append(errs, err)...)
		}
		var mine []dnstasks.RecordSet
		for _, rs := range sets {
			if published[dnstasks.CanonicalName(rs.Name)] && dnstasks.Supported(rs.Type) {
				mine = append(mine, rs)
			}
		}
		// Deleted at once, they go in one change of the zone.
		var keys []string
		byKey := map[string]dnstasks.RecordSet{}
		for _, rs := range mine {
			k := rs.Name + "/" + rs.Type
			keys = append(keys, k)
			byKey[k] = rs
		}
		record("DNSRecord", keys, func(k string) error { return c.DNSProvider().Delete(ctx, byKey[k].Name, byKey[k].Type) })
	}
	return deleted, errors.Join(errs...)
}

// tableRoute is a route of a route table, by its destination.
type tableRoute struct{ table, dst string }

// routesToClusterInstances returns the routes of every route table whose target is one of the cluster's
// instances, whatever their state, by "<route table>/<destination>": one DescribeInstances, and one
// DescribeRouteTables per 200 instances.
func (c *Cloud) routesToClusterInstances(ctx context.Context) (map[string]tableRoute, error) {
	instances, err := c.describeInstances(ctx, "listing the cluster's instances", c.ownedFilter())
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, i := range instances {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	out := map[string]tableRoute{}
	for chunk := range slices.Chunk(ids, 200) {
		tables, err := c.describeRouteTables(ctx, "listing the route tables that route to the cluster's instances",
			ec2types.Filter{Name: aws.String("route.instance-id"), Values: chunk})
		if err != nil {
			return nil, err
		}
		for _, t := range tables {
			for _, r := range t.Routes {
				if dst := aws.ToString(r.DestinationCidrBlock); slices.Contains(chunk, aws.ToString(r.InstanceId)) && dst != "" {
					table := aws.ToString(t.RouteTableId)
					out[table+"/"+dst] = tableRoute{table: table, dst: dst}
				}
			}
		}
	}
	return out, nil
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// deleteAutoScalingGroup deletes the group with its instances and waits, until deadline, until
// DescribeAutoScalingGroups no longer lists it.
func (c *Cloud) deleteAutoScalingGroup(ctx context.Context, deadline time.Time, name string) error {
	what := "Auto Scaling group " + name
	_, err := c.AutoScaling.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{
		AutoScalingGroupName: aws.String(name), ForceDelete: aws.Bool(true),
	})
	gone := func() (bool, error) {
		out, err := c.AutoScaling.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{
			AutoScalingGroupNames: []string{name},
		})
		if err != nil {
			return false, Classify("reading "+what, err)
		}
		return len(out.AutoScalingGroups) == 0, nil
	}
	switch code := ErrorCode(err); {
	case err == nil, code == "ScalingActivityInProgress":
		// Being deleted (by this call or an earlier one).
	case code == "ValidationError":
		// Auto Scaling says a group is not found with ValidationError, the code of every malformed request too:
		// whether the group is gone is asked of DescribeAutoScalingGroups rather than read in the message.
		if done, derr := gone(); derr != nil || !done {
			return Classify("deleting "+what, err)
		}
		return nil
	default:
		return Classify("deleting "+what, err)
	}
	return poll(ctx, deadline, "waiting for "+what+" to be deleted", gone)
}

// strayInstances returns the ids of the instances that carry the cluster's ownership tag, have not ended, and are
// in none of its Auto Scaling groups: without an aws:autoscaling:groupName tag, or naming one of groups that no
// longer lists them (detached). An instance of another Auto Scaling group is that group's, and is left (said).
func (c *Cloud) strayInstances(ctx context.Context, groups map[string]asgtypes.AutoScalingGroup) ([]string, error) {
	inGroup := map[string]bool{}
	for _, g := range groups {
		for _, i := range g.Instances {
			inGroup[aws.ToString(i.InstanceId)] = true
		}
	}
	var out []string
	p := ec2.NewDescribeInstancesPaginator(c.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		c.ownedFilter(),
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, Classify("listing the cluster's instances", err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				id := aws.ToString(i.InstanceId)
				group := tagsOf(i.Tags)[asgNameTag]
				_, ours := groups[group]
				switch {
				case inGroup[id]:
				case group == "" || ours:
					out = append(out, id)
				default:
					engine.Logger(ctx).Warn("an instance tagged as the cluster's belongs to an Auto Scaling group that is not the cluster's: left to that group",
						"instance", id, "group", group, "tag", ClusterTag(c.Cluster))
				}
			}
		}
	}
	return out, nil
}

// asgNameTag is the tag Auto Scaling gives the instances it launches: the group's name.
const asgNameTag = "aws:autoscaling:groupName"

// terminateInstance terminates an instance; one already gone is no error. The security groups and volumes it
// holds are deleted once it has ended (their deletes wait for that).
func (c *Cloud) terminateInstance(ctx context.Context, id string) error {
	_, err := c.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if ErrorCode(err) == "InvalidInstanceID.NotFound" {
		return nil
	}
	return Classify("terminating instance "+id, err)
}

// revokeCrossReferences revokes the ingress rules by which the cluster's groups refer to one another, which
// would stop their deletion.
func (c *Cloud) revokeCrossReferences(ctx context.Context, sgs []ec2types.SecurityGroup) []error {
	owned := map[string]bool{}
	for _, sg := range sgs {
		owned[aws.ToString(sg.GroupId)] = true
	}
	var errs []error
	for _, sg := range sgs {
		var perms []ec2types.IpPermission
		for _, p := range sg.IpPermissions {
			var pairs []ec2types.UserIdGroupPair
			for _, pair := range p.UserIdGroupPairs {
				if owned[aws.ToString(pair.GroupId)] {
					pairs = append(pairs, ec2types.UserIdGroupPair{GroupId: pair.GroupId})
				}
			}
			if len(pairs) > 0 {
				perms = append(perms, ec2types.IpPermission{IpProtocol: p.IpProtocol, FromPort: p.FromPort, ToPort: p.ToPort, UserIdGroupPairs: pairs})
			}
		}
		if len(perms) == 0 {
			continue
		}
		_, err := c.EC2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: sg.GroupId, IpPermissions: perms})
		if code := ErrorCode(err); err != nil && code != "InvalidGroup.NotFound" && code != "InvalidPermission.NotFound" {
			errs = append(errs, fmt.Errorf("SecurityGroup/%s: %w", aws.ToString(sg.GroupName),
				Classify("revoking the rules that refer to the cluster's other groups", err)))
		}
	}
	return errs
}

// deleteSecurityGroup deletes the group, waiting until deadline while it is still in use (the instances of a
// deleted Auto Scaling group ending).
func (c *Cloud) deleteSecurityGroup(ctx context.Context, deadline time.Time, sg ec2types.SecurityGroup) error {
	what := fmt.Sprintf("security group %s (%s)", aws.ToString(sg.GroupName), aws.ToString(sg.GroupId))
	return poll(ctx, deadline, "deleting "+what, func() (bool, error) {
		_, err := c.EC2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sg.GroupId})
		switch {
		case err == nil, ErrorCode(err) == "InvalidGroup.NotFound":
			return true, nil
		case ErrorCode(err) == "DependencyViolation":
			return false, Classify("deleting "+what+" (still in use)", err)
		}
		return false, Classify("deleting "+what, err)
	})
}

// deleteVolume deletes the volume once it is detached, waiting for that until deadline.
func (c *Cloud) deleteVolume(ctx context.Context, deadline time.Time, name string, v ec2types.Volume) error {
	id := aws.ToString(v.VolumeId)
	what := fmt.Sprintf("EBS volume %s (%s)", name, id)
	var attachedTo string
	gone := false
	err := poll(ctx, deadline, "waiting for "+what+" to be detached", func() (bool, error) {
		out, err := c.EC2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
		if ErrorCode(err) == volumeNotFound {
			gone = true
			return true, nil
		}
		if err != nil {
			return false, Classify("reading "+what, err)
		}
		if len(out.Volumes) == 0 || deletedState(string(out.Volumes[0].State)) {
			gone = true
			return true, nil
		}
		attachedTo = ""
		for _, a := range out.Volumes[0].Attachments {
			if a.State != ec2types.VolumeAttachmentStateDetached {
				attachedTo = aws.ToString(a.InstanceId)
			}
		}
		return attachedTo == "", nil
	})
	if err != nil {
		if attachedTo != "" {
			return fmt.Errorf("%s is still attached to instance %s at the end of the deletion's %s: that instance is not one of the cluster's Auto Scaling "+
				"groups', or has not ended; detach the volume (or end the instance) and run the deletion again: %w",
				what, attachedTo, deleteWait, err)
		}
		return err
	}
	if gone {
		return nil
	}
	_, err = c.EC2.DeleteVolume(ctx, &ec2.DeleteVolumeInput{VolumeId: v.VolumeId})
	if err != nil && ErrorCode(err) != volumeNotFound {
		return Classify("deleting "+what, err)
	}
	return nil
}

// volumeNotFound is EC2's error code for a volume id it does not know (any more).
const volumeNotFound = "InvalidVolume.NotFound"

// poll calls check every deletePoll until it reports done, until deadline. Errors of check that are not terminal
// (throttling, a group still in use) are retried; the last one is returned when the time is up.
func poll(ctx context.Context, deadline time.Time, doing string, check func() (bool, error)) error {
	var last error
	start, reported := time.Now(), time.Now()
	for {
		done, err := check()
		if done {
			return nil
		}
		if err != nil && engine.ClassOf(err) == engine.ClassTerminal && ErrorCode(err) != "DependencyViolation" {
			return err
		}
		last = err
		if time.Since(reported) >= deleteReport {
			reported = time.Now()
			engine.Logger(ctx).Warn("still waiting", "for", doing, "waited", time.Since(start).Round(time.Second),
				"givingUpAt", deadline.Format(time.TimeOnly), "last", last)
		}
		if time.Now().After(deadline) {
			if last != nil && ErrorCode(last) == "DependencyViolation" {
				return fmt.Errorf("%s: gave up at the end of the deletion's %s: %w: something outside the cluster still uses it "+
					"(a rule of another security group that names it, a network interface): remove that, then run the delete again", doing, deleteWait, last)
			}
			if last != nil {
				return fmt.Errorf("%s: gave up at the end of the deletion's %s: %w", doing, deleteWait, last)
			}
			return fmt.Errorf("%s: gave up at the end of the deletion's %s", doing, deleteWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", doing, ctx.Err())
		case <-time.After(deletePoll):
		}
	}
}
