package awstasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"kubeup.dev/kubeup/engine"
)

// UnusedGroups deletes what the instance groups removed from the cluster's spec leave: the cluster's Auto
// Scaling groups (their instances with them) and launch templates whose group tag (GroupTag) names a group that
// is not one of Groups. Both are the cluster's by the ownership tag (kubernetes.io/cluster/<name>=owned, as
// DeleteOwned takes them); nothing else is ever touched: not another cluster's, not one made by hand, not one
// without the group tag, never one of Keep. Its key is "UnusedGroups/<Cluster>".
type UnusedGroups struct {
	// Cluster is the cluster's name; it must be the Cloud's.
	Cluster string
	// GroupTag is the tag that names an instance group ("kubeup.dev/instance-group").
	GroupTag string
	// Groups are the names of the spec's instance groups. Found: the same, and the keys
	// ("AutoScalingGroup/<name>", "LaunchTemplate/<name>") of what Render deletes (a plan shows them as removed).
	Groups []string `kubeup:"set,nilempty"`
	// Keep are the graph's Auto Scaling groups: run first (with their launch templates), never deleted.
	Keep []*AutoScalingGroup `kubeup:"-"`

	asgs, templates []string // found: what to delete, sorted
	templateIDs     map[string]string
}

var (
	_ engine.Resource[*UnusedGroups, *Cloud] = (*UnusedGroups)(nil)
	_ engine.Renderer[*UnusedGroups, *Cloud] = (*UnusedGroups)(nil)
)

func (u *UnusedGroups) Key() engine.Key { return engine.Key{Type: "UnusedGroups", Name: u.Cluster} }

func (u *UnusedGroups) Deps() []engine.Task {
	deps := make([]engine.Task, 0, len(u.Keep))
	for _, g := range u.Keep {
		deps = append(deps, g)
	}
	return deps
}

// Find reads the cluster's Auto Scaling groups and launch templates (the run's shared reads).
func (u *UnusedGroups) Find(ctx context.Context, c *Cloud) (*UnusedGroups, error) {
	if u.Cluster != c.Cluster {
		return nil, engine.Terminal(fmt.Errorf("the instance groups of cluster %s cannot be cleaned up in the cloud of cluster %s", u.Cluster, c.Cluster))
	}
	a := &UnusedGroups{Cluster: u.Cluster, GroupTag: u.GroupTag, Groups: slices.Clone(u.Groups), templateIDs: map[string]string{}}
	if u.GroupTag == "" {
		return a, nil
	}
	kept := map[string]bool{}
	for _, g := range u.Keep {
		kept[g.Name] = true
		if g.LaunchTemplate != nil {
			kept[g.LaunchTemplate.Name] = true
		}
	}
	removed := func(name string, tags map[string]string) bool {
		g, ok := tags[u.GroupTag]
		return ok && g != "" && tags[ClusterTag(c.Cluster)] == ownedValue && !slices.Contains(u.Groups, g) && !kept[name]
	}
	asgs, err := c.autoScalingGroups(ctx)
	if err != nil {
		return nil, err
	}
	for name, g := range asgs {
		if removed(name, asgTags(g.Tags)) {
			a.asgs = append(a.asgs, name)
		}
	}
	templates, err := c.launchTemplates(ctx)
	if err != nil {
		return nil, err
	}
	for name, t := range templates {
		if removed(name, tagsOf(t.template.Tags)) {
			a.templates = append(a.templates, name)
			a.templateIDs[name] = *t.template.LaunchTemplateId
		}
	}
	slices.Sort(a.asgs)
	slices.Sort(a.templates)
	for _, n := range a.asgs {
		a.Groups = append(a.Groups, "AutoScalingGroup/"+n)
	}
	for _, n := range a.templates {
		a.Groups = append(a.Groups, "LaunchTemplate/"+n)
	}
	return a, nil
}

// CheckChanges requires the cluster's name and the group tag.
func (u *UnusedGroups) CheckChanges(actual, expected, changes *UnusedGroups) error {
	if expected.Cluster == "" {
		return errors.New("field Cluster of the cluster's unused instance groups is required")
	}
	if expected.GroupTag == "" {
		return fmt.Errorf("field GroupTag of the unused instance groups of cluster %s is required", expected.Cluster)
	}
	return nil
}

// Render deletes the Auto Scaling groups found (with their instances), waiting until they are gone, then the
// launch templates.
func (u *UnusedGroups) Render(ctx context.Context, c *Cloud, actual, expected, changes *UnusedGroups) error {
	if actual == nil || len(actual.asgs)+len(actual.templates) == 0 {
		return nil
	}
	defer c.reads.asgs.Forget()
	defer c.reads.templates.Forget()
	deadline := time.Now().Add(deleteWait)
	for _, name := range actual.asgs {
		if err := c.deleteAutoScalingGroup(ctx, deadline, name); err != nil {
			return fmt.Errorf("deleting Auto Scaling group %s (its instance group is no longer in the spec): %w", name, err)
		}
		engine.Logger(ctx).Info("deleted Auto Scaling group of an instance group no longer in the spec", "name", name)
	}
	for _, name := range actual.templates {
		id := actual.templateIDs[name]
		_, err := c.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: &id})
		if code := ErrorCode(err); code == "InvalidLaunchTemplateId.NotFound" || code == "InvalidLaunchTemplateName.NotFoundException" {
			continue
		}
		if err != nil {
			return Classify("deleting launch template "+name+" (its instance group is no longer in the spec)", err)
		}
		engine.Logger(ctx).Info("deleted launch template of an instance group no longer in the spec", "name", name)
	}
	return nil
}
