package awstasks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"kubeup.dev/kubeup/engine"
)

// AutoScalingGroup is an Auto Scaling group the cluster owns: the machines of one instance group, launched from
// its launch template in its subnets. Its key is "AutoScalingGroup/<Name>".
//
// The group launches the template's default version by number (not $Latest or $Default), so a new version of
// the template is a change of the group that plans show.
type AutoScalingGroup struct {
	// Name is the group's name: "<instance group>.<cluster>".
	Name string
	// MinSize and MaxSize bound the group's size. Required to create.
	MinSize, MaxSize *int32
	// Subnets are the subnets the group launches in, in any order. Required to create.
	Subnets []*Subnet `kubeup:"set,nilempty"`
	// LaunchTemplate is what the group launches. Required to create.
	LaunchTemplate *LaunchTemplate
	// Tags are the group's tags besides Name and the ownership tag (see the package's tag rules); each is
	// propagated to the instances the group launches.
	Tags map[string]string `kubeup:"nilempty"`

	rawTags map[string]string
}

var (
	_ engine.Resource[*AutoScalingGroup, *Cloud] = (*AutoScalingGroup)(nil)
	_ engine.Renderer[*AutoScalingGroup, *Cloud] = (*AutoScalingGroup)(nil)
	_ engine.Classed                             = (*AutoScalingGroup)(nil)
)

func (g *AutoScalingGroup) Key() engine.Key {
	return engine.Key{Type: "AutoScalingGroup", Name: g.Name}
}

func (g *AutoScalingGroup) Deps() []engine.Task {
	var deps []engine.Task
	for _, s := range g.Subnets {
		deps = append(deps, s)
	}
	if g.LaunchTemplate != nil {
		deps = append(deps, g.LaunchTemplate)
	}
	return deps
}

func (g *AutoScalingGroup) APIClass() string { return "autoscaling" }

// Find looks the group up among the cluster's groups (one DescribeAutoScalingGroups per run for all of them).
// The launch template reads as the task's when the group launches the template's default version, and as
// "<name> (version N)" when it launches another version (or another template), so that the change shows.
func (g *AutoScalingGroup) Find(ctx context.Context, c *Cloud) (*AutoScalingGroup, error) {
	all, err := c.autoScalingGroups(ctx)
	if err != nil {
		return nil, err
	}
	found, ok := all[g.Name]
	if !ok {
		return nil, nil
	}
	raw := asgTags(found.Tags)
	a := &AutoScalingGroup{
		Name:    g.Name,
		MinSize: found.MinSize,
		MaxSize: found.MaxSize,
		Tags:    c.tagView(raw, g.Tags),
		rawTags: raw,
	}
	for _, id := range strings.Split(aws.ToString(found.VPCZoneIdentifier), ",") {
		if id = strings.TrimSpace(id); id != "" {
			a.Subnets = append(a.Subnets, &Subnet{ID: id})
		}
	}
	a.LaunchTemplate = g.launchTemplateAsFound(found)
	return a, nil
}

// launchTemplateAsFound is the task's launch template when the group launches its default version, else a
// template named after what the group launches.
func (g *AutoScalingGroup) launchTemplateAsFound(found asgtypes.AutoScalingGroup) *LaunchTemplate {
	spec := found.LaunchTemplate
	if spec == nil && found.MixedInstancesPolicy != nil && found.MixedInstancesPolicy.LaunchTemplate != nil {
		spec = found.MixedInstancesPolicy.LaunchTemplate.LaunchTemplateSpecification
	}
	if spec == nil {
		if name := aws.ToString(found.LaunchConfigurationName); name != "" {
			return &LaunchTemplate{Name: "(launch configuration " + name + ")"}
		}
		return nil
	}
	want := g.LaunchTemplate
	sameTemplate := want != nil && (want.ID != nil && aws.ToString(spec.LaunchTemplateId) == *want.ID ||
		want.ID == nil && aws.ToString(spec.LaunchTemplateName) == want.Name)
	if sameTemplate && want.Version != nil && aws.ToString(spec.Version) == strconv.FormatInt(*want.Version, 10) {
		return want
	}
	name := aws.ToString(spec.LaunchTemplateName)
	if name == "" {
		name = aws.ToString(spec.LaunchTemplateId)
	}
	return &LaunchTemplate{Name: fmt.Sprintf("%s (version %s)", name, aws.ToString(spec.Version))}
}

// CheckChanges requires sizes, subnets and a launch template to create, and MinSize <= MaxSize.
func (g *AutoScalingGroup) CheckChanges(actual, expected, changes *AutoScalingGroup) error {
	if expected.Name == "" {
		return errors.New("field Name of an Auto Scaling group is empty")
	}
	if actual == nil {
		switch {
		case expected.MinSize == nil || expected.MaxSize == nil:
			return fmt.Errorf("fields MinSize and MaxSize are required to create Auto Scaling group %s", expected.Name)
		case len(expected.Subnets) == 0:
			return fmt.Errorf("field Subnets is required to create Auto Scaling group %s", expected.Name)
		case expected.LaunchTemplate == nil:
			return fmt.Errorf("field LaunchTemplate is required to create Auto Scaling group %s", expected.Name)
		}
	}
	minSize, maxSize := expected.MinSize, expected.MaxSize
	if actual != nil {
		if minSize == nil {
			minSize = actual.MinSize
		}
		if maxSize == nil {
			maxSize = actual.MaxSize
		}
	}
	if minSize != nil && maxSize != nil && (*minSize < 0 || *minSize > *maxSize) {
		return fmt.Errorf("fields MinSize and MaxSize of Auto Scaling group %s: %d and %d: give 0 <= MinSize <= MaxSize",
			expected.Name, *minSize, *maxSize)
	}
	return nil
}

// Render creates the group (a group of the name that an earlier, interrupted run made is found again and brought
// up to date), or updates its sizes, subnets and launch template version in one UpdateAutoScalingGroup, and its
// tags.
func (g *AutoScalingGroup) Render(ctx context.Context, c *Cloud, actual, expected, changes *AutoScalingGroup) error {
	defer c.reads.asgs.Forget()
	what := "Auto Scaling group " + expected.Name
	var lt *asgtypes.LaunchTemplateSpecification
	if expected.LaunchTemplate != nil && (actual == nil || changes.LaunchTemplate != nil) {
		if expected.LaunchTemplate.ID == nil || expected.LaunchTemplate.Version == nil {
			return engine.NotReady(fmt.Errorf("the id and version of launch template %s are not known yet", expected.LaunchTemplate.Name))
		}
		lt = &asgtypes.LaunchTemplateSpecification{
			LaunchTemplateId: expected.LaunchTemplate.ID,
			Version:          aws.String(strconv.FormatInt(*expected.LaunchTemplate.Version, 10)),
		}
	}
	var zones *string
	if actual == nil || changes.Subnets != nil {
		ids := make([]string, len(expected.Subnets))
		for i, s := range expected.Subnets {
			ids[i] = s.ID
		}
		slices.Sort(ids)
		zones = aws.String(strings.Join(ids, ","))
	}
	desired := c.desiredTags(expected.Name, expected.Tags)
	if actual == nil {
		_, err := c.AutoScaling.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
			AutoScalingGroupName: aws.String(expected.Name),
			MinSize:              expected.MinSize,
			MaxSize:              expected.MaxSize,
			VPCZoneIdentifier:    zones,
			LaunchTemplate:       lt,
			Tags:                 asgTagList(expected.Name, desired),
		})
		if ErrorCode(err) == "AlreadyExists" {
			return g.existing(ctx, c, Classify("creating "+what, err))
		}
		if err != nil {
			return templateNotKnownYet(Classify("creating "+what, err))
		}
		engine.Logger(ctx).Info("created Auto Scaling group")
		return nil
	}
	if changes.MinSize != nil || changes.MaxSize != nil || zones != nil || lt != nil {
		_, err := c.AutoScaling.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
			AutoScalingGroupName: aws.String(expected.Name),
			MinSize:              changes.MinSize,
			MaxSize:              changes.MaxSize,
			VPCZoneIdentifier:    zones,
			LaunchTemplate:       lt,
		})
		if err != nil {
			return templateNotKnownYet(Classify("updating "+what, err))
		}
		engine.Logger(ctx).Info("updated Auto Scaling group")
	}
	set, remove := tagChanges(actual.rawTags, desired)
	if len(set) > 0 {
		if _, err := c.AutoScaling.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: asgTagList(expected.Name, set)}); err != nil {
			return Classify("tagging "+what, err)
		}
	}
	if len(remove) > 0 {
		tags := make([]asgtypes.Tag, len(remove))
		for i, k := range remove {
			tags[i] = asgtypes.Tag{Key: aws.String(k), ResourceId: aws.String(expected.Name), ResourceType: aws.String("auto-scaling-group")}
		}
		if _, err := c.AutoScaling.DeleteTags(ctx, &autoscaling.DeleteTagsInput{Tags: tags}); err != nil {
			return Classify("removing tags from "+what, err)
		}
	}
	return nil
}

// existing explains a group of g's name that a create found already there (dup is the create's error): the
// cluster's own (an earlier run made it and stopped before it was done, or the list did not show it yet) is read
// again and brought up to date (NotReady); someone else's is an error that waiting does not mend.
func (g *AutoScalingGroup) existing(ctx context.Context, c *Cloud, dup error) error {
	what := "Auto Scaling group " + g.Name
	out, err := c.AutoScaling.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{
		AutoScalingGroupNames: []string{g.Name},
	})
	if err != nil {
		return Classify("reading "+what, err)
	}
	if len(out.AutoScalingGroups) > 0 && asgTags(out.AutoScalingGroups[0].Tags)[ClusterTag(c.Cluster)] != ownedValue {
		return engine.Terminal(fmt.Errorf("an Auto Scaling group named %s exists and is not this cluster's (no tag %s=%s): rename the "+
			"instance group or remove the group: %w", g.Name, ClusterTag(c.Cluster), ownedValue, dup))
	}
	return engine.NotReady(fmt.Errorf("%s exists already: reading it again: %w", what, dup))
}

// templateNotKnownYet makes err NotReady when it is Auto Scaling's answer about a launch template (or version)
// that does not exist: one just made is unknown to Auto Scaling for a while (eventual consistency). The task's
// deadline bounds the wait.
func templateNotKnownYet(err error) error {
	if ErrorCode(err) == "ValidationError" && strings.Contains(err.Error(), "launch template") &&
		strings.Contains(err.Error(), "does not exist") {
		return engine.NotReady(fmt.Errorf("%w (a new launch template is not known to Auto Scaling yet)", err))
	}
	return err
}

// asgTagList is tags as the tags of group, propagated to the instances it launches, sorted by key.
func asgTagList(group string, tags map[string]string) []asgtypes.Tag {
	out := make([]asgtypes.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, asgtypes.Tag{
			Key: aws.String(k), Value: aws.String(tags[k]), PropagateAtLaunch: aws.Bool(true),
			ResourceId: aws.String(group), ResourceType: aws.String("auto-scaling-group"),
		})
	}
	return out
}
