package awstasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/removedgroups"
)

// UnusedGroups is what the instance groups removed from the cluster's spec leave: the cluster's Auto Scaling
// groups (their instances with them) and launch templates whose group tag (GroupTag) names a group that is not
// one of Groups. Both are the cluster's by the ownership tag (kubernetes.io/cluster/<name>=owned, as DeleteOwned
// takes them); nothing else is ever touched: not another cluster's, not one made by hand, not one without the
// group tag, never one named in Keep.
//
// It is no task of the graph: a task's change is one change of its own key, and a reviewer must read each
// object a run deletes. The caller runs it after the graph (cloudup: the dry run adds Deletions to its plan, one
// "delete AutoScalingGroup/<name>" or "delete LaunchTemplate/<name>" each; an apply then calls Delete), so that
// the kept groups are made before the removed ones go.
type UnusedGroups struct {
	// Cluster is the cluster's name; it must be the Cloud's.
	Cluster string
	// GroupTag is the tag that names an instance group ("kubeup.dev/instance-group").
	GroupTag string
	// Groups are the names of the spec's instance groups.
	Groups []string
	// Keep are the names of the graph's Auto Scaling groups and launch templates: never deleted.
	Keep []string
}

// unused is one Auto Scaling group or launch template UnusedGroups deletes.
type unused struct {
	removedgroups.Object        // AutoScalingGroup/<name> or LaunchTemplate/<name>
	id                   string // a launch template's id
}

// find reads the cluster's Auto Scaling groups and launch templates (the run's shared reads; fresh: read again)
// and returns what Delete deletes: the Auto Scaling groups, then the launch templates, each sorted by name.
func (u *UnusedGroups) find(ctx context.Context, c *Cloud, fresh bool) ([]unused, error) {
	if u.Cluster != c.Cluster {
		return nil, engine.Terminal(fmt.Errorf("the instance groups of cluster %s cannot be cleaned up in the cloud of cluster %s", u.Cluster, c.Cluster))
	}
	if u.GroupTag == "" {
		return nil, engine.Terminal(errors.New("the tag that names an instance group is required to find the unused ones"))
	}
	if fresh {
		c.reads.asgs.Forget()
		c.reads.templates.Forget()
	}
	group := func(name string, tags map[string]string) (string, bool) {
		g, ok := tags[u.GroupTag]
		return g, ok && g != "" && tags[ClusterTag(c.Cluster)] == ownedValue && !slices.Contains(u.Groups, g) &&
			!slices.Contains(u.Keep, name)
	}
	asgs, err := c.autoScalingGroups(ctx)
	if err != nil {
		return nil, err
	}
	var groups, templates []unused
	for name, a := range asgs {
		if g, ok := group(name, asgTags(a.Tags)); ok {
			groups = append(groups, unused{Object: removedgroups.Object{Key: engine.Key{Type: "AutoScalingGroup", Name: name}, Group: g, Machines: true}})
		}
	}
	lts, err := c.launchTemplates(ctx)
	if err != nil {
		return nil, err
	}
	for name, t := range lts {
		if g, ok := group(name, tagsOf(t.template.Tags)); ok {
			templates = append(templates, unused{Object: removedgroups.Object{Key: engine.Key{Type: "LaunchTemplate", Name: name}, Group: g},
				id: *t.template.LaunchTemplateId})
		}
	}
	return removedgroups.Sorted(groups, templates), nil
}

// Deletions returns what Delete would delete now, as the plan's deletions (fresh: the run's reads are read
// again first).
func (u *UnusedGroups) Deletions(ctx context.Context, c *Cloud, fresh bool) ([]engine.Change, error) {
	found, err := u.find(ctx, c, fresh)
	return removedgroups.Deletions(found), err
}

// Delete deletes, of planned (Deletions' answer in the dry run), what is still there: the Auto Scaling groups
// (with their instances, waiting until each is gone), then the launch templates. What it finds that planned does
// not hold is left for the next run, whose dry run lists it. It returns the deletions done, also when it fails.
func (u *UnusedGroups) Delete(ctx context.Context, c *Cloud, planned []engine.Change) ([]engine.Change, error) {
	found, err := u.find(ctx, c, true)
	if err != nil {
		return nil, err
	}
	defer c.reads.asgs.Forget()
	defer c.reads.templates.Forget()
	deadline := time.Now().Add(deleteWait)
	var done []engine.Change
	for _, o := range removedgroups.Planned(found, planned) {
		switch o.Key.Type {
		case "AutoScalingGroup":
			if err := c.deleteAutoScalingGroup(ctx, deadline, o.Key.Name); err != nil {
				return done, fmt.Errorf("deleting Auto Scaling group %s (instance group %s is no longer in the spec): %w", o.Key.Name, o.Group, err)
			}
		case "LaunchTemplate":
			_, err := c.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: &o.id})
			if code := ErrorCode(err); code == "InvalidLaunchTemplateId.NotFound" || code == "InvalidLaunchTemplateName.NotFoundException" {
				continue
			} else if err != nil {
				return done, Classify("deleting launch template "+o.Key.Name+" (instance group "+o.Group+" is no longer in the spec)", err)
			}
		}
		done = append(done, o.Change())
	}
	return done, nil
}
