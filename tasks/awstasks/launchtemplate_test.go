package awstasks

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// fieldsOf returns the changed fields of each change of a plan, by key.
func fieldsOf(p *engine.Plan) map[string][]string {
	out := map[string][]string{}
	for _, ch := range p.Changes {
		var names []string
		for _, f := range ch.Fields {
			names = append(names, f.Name)
		}
		out[ch.Key.String()] = names
	}
	return out
}

func defaultVersion(t *testing.T, c *Cloud, name string) (int64, string) {
	t.Helper()
	out, err := c.EC2.DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateName: aws.String(name), Versions: []string{"$Default"},
	})
	if err != nil || len(out.LaunchTemplateVersions) != 1 {
		t.Fatalf("default version of %s: %v, %v", name, out, err)
	}
	v := out.LaunchTemplateVersions[0]
	return aws.ToInt64(v.VersionNumber), decodeUserData(aws.ToString(v.LaunchTemplateData.UserData))
}

func groupVersion(t *testing.T, c *Cloud, name string) string {
	t.Helper()
	out, err := c.AutoScaling.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{
		AutoScalingGroupNames: []string{name},
	})
	if err != nil || len(out.AutoScalingGroups) != 1 || out.AutoScalingGroups[0].LaunchTemplate == nil {
		t.Fatalf("group %s: %v, %v", name, out, err)
	}
	return aws.ToString(out.AutoScalingGroups[0].LaunchTemplate.Version)
}

// A change of the user data is a new default version of the template, which the group then launches; the dry
// run shows both, the user data as a line diff.
func TestLaunchTemplateChangeIsANewDefaultVersionTheGroupLaunches(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	mustRun(t, c, engine.Apply, clusterGraph(n, defaultSpec()))
	name := "nodes." + testCluster
	if v, _ := defaultVersion(t, c, name); v != 1 {
		t.Fatalf("default version %d, want 1", v)
	}

	s := defaultSpec()
	s.userData = "#!/bin/bash\necho nodes, version 2\n"
	build := clusterGraph(n, s)
	plan := mustRun(t, c, engine.DryRun, build)
	want := map[string][]string{
		"LaunchTemplate/control-plane." + testCluster:   {"UserData"},
		"LaunchTemplate/nodes." + testCluster:           {"UserData"},
		"AutoScalingGroup/control-plane." + testCluster: {"LaunchTemplate"},
		"AutoScalingGroup/nodes." + testCluster:         {"LaunchTemplate"},
	}
	if diff := cmp.Diff(want, fieldsOf(plan)); diff != "" {
		t.Errorf("planned changes (-want +got):\n%s", diff)
	}
	for _, ch := range plan.Changes {
		if ch.Key.String() == "LaunchTemplate/"+name {
			if old, _ := ch.Fields[0].Old.(*string); old == nil || !strings.Contains(*old, "echo nodes\n") {
				t.Errorf("old user data %v, want the text", ch.Fields[0].Old)
			}
		}
	}
	srv.ResetCalls()
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, build))
	if diff := cmp.Diff(map[string]int{"CreateLaunchTemplateVersion": 2, "ModifyLaunchTemplate": 2, "UpdateAutoScalingGroup": 2},
		mutatingCalls(srv.Calls())); diff != "" {
		t.Errorf("mutating calls (-want +got):\n%s", diff)
	}
	v, data := defaultVersion(t, c, name)
	if v != 2 || data != s.userData+"# nodes\n" {
		t.Errorf("default version %d with user data %q, want 2 with the new text", v, data)
	}
	if got := groupVersion(t, c, name); got != "2" {
		t.Errorf("the group launches version %s, want 2", got)
	}
}

// The image pattern is the newest matching image, and reads as the pattern while the version runs it.
func TestLaunchTemplateImagePattern(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, clusterGraph(n, defaultSpec())))
	im, err := c.image(context.Background(), "debian-12-amd64")
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(im.Name); got != "debian-12-amd64-20261101-2000" {
		t.Errorf("image %s, want the newest debian-12-amd64", got)
	}
	out, err := c.EC2.DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateName: aws.String("nodes." + testCluster), Versions: []string{"$Default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := out.LaunchTemplateVersions[0].LaunchTemplateData
	if aws.ToString(d.ImageId) != aws.ToString(im.ImageId) {
		t.Errorf("the version runs %s, want %s", aws.ToString(d.ImageId), aws.ToString(im.ImageId))
	}
	if d.MetadataOptions == nil || d.MetadataOptions.HttpTokens != "required" {
		t.Errorf("metadata options %+v, want IMDSv2 (HttpTokens required)", d.MetadataOptions)
	}
	// The image named by its id is the same image: no change.
	s := defaultSpec()
	s.image = aws.ToString(im.ImageId)
	if p := mustRun(t, c, engine.DryRun, clusterGraph(n, s)); !p.Empty() {
		t.Errorf("the same image by id plans changes: %v", fieldsOf(p))
	}
}

func TestLaunchTemplateImageNotFound(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	s := defaultSpec()
	s.image = "no-such-image"
	_, err := runOnce(t, c, engine.DryRun, clusterGraph(n, s))
	if err == nil || !strings.Contains(err.Error(), `no available image is named like "no-such-image*"`) {
		t.Errorf("err = %v, want the pattern named", err)
	}
}

// Security groups in another order are the same template.
func TestLaunchTemplateSecurityGroupOrder(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	build := func(reverse bool) func() *engine.Graph[*Cloud] {
		return func() *engine.Graph[*Cloud] {
			g := engine.NewGraph[*Cloud]()
			vpc := engine.Add(g, &VPC{ID: n.vpc}, engine.WithLifecycle(engine.ExistsAndValidates))
			a := engine.Add(g, &SecurityGroup{Name: "a." + testCluster, VPC: vpc})
			b := engine.Add(g, &SecurityGroup{Name: "b." + testCluster, VPC: vpc})
			groups := []*SecurityGroup{a, b}
			if reverse {
				groups = []*SecurityGroup{b, a}
			}
			engine.Add(g, &LaunchTemplate{Name: "lt." + testCluster, Image: aws.String("debian-12-amd64"),
				InstanceType: aws.String("t3.small"), SecurityGroups: groups, UserData: aws.String("")})
			return g
		}
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, build(false)))
	if p := mustRun(t, c, engine.DryRun, build(true)); !p.Empty() {
		t.Errorf("groups in another order plan changes: %v", fieldsOf(p))
	}
}

// A template that an interrupted run made, not yet listed when this run looked: the create is answered
// AlreadyExists, and the task tries again (not ready) instead of failing; the next attempt finds it.
func TestLaunchTemplateAlreadyExistsIsRetried(t *testing.T) {
	c, _ := newTestCloud(t)
	ctx := context.Background()
	lt := &LaunchTemplate{Name: "lt." + testCluster, Image: aws.String("debian-12-amd64"), InstanceType: aws.String("t3.small")}
	if err := lt.Render(ctx, c, nil, lt, lt); err != nil {
		t.Fatal(err)
	}
	again := &LaunchTemplate{Name: lt.Name, Image: lt.Image, InstanceType: aws.String("t3.medium")}
	err := again.Render(ctx, c, nil, again, again)
	if engine.ClassOf(err) != engine.ClassNotReady {
		t.Fatalf("err = %v (%s), want not ready", err, engine.ClassOf(err))
	}
	build := func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		engine.Add(g, &LaunchTemplate{Name: lt.Name, Image: lt.Image, InstanceType: aws.String("t3.medium")})
		return g
	}
	enginetest.ApplyThenNoChanges(t, ctx, c, freshRuns(c, build))
	if v, _ := defaultVersion(t, c, lt.Name); v != 2 {
		t.Errorf("default version %d, want 2", v)
	}
}

// A launch template or Auto Scaling group of the name that is not the cluster's fails at once, with what to do.
func TestForeignTemplateAndGroupOfTheName(t *testing.T) {
	ctx := context.Background()
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	// foreign makes a template that is not the cluster's.
	foreign := func(c *Cloud, name string) string {
		im, err := c.image(ctx, "debian-12-amd64")
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: im.ImageId, InstanceType: ec2types.InstanceTypeT3Medium}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.LaunchTemplate.LaunchTemplateId)
	}
	foreign(c, "nodes."+testCluster)
	_, err := runOnce(t, c, engine.Apply, clusterGraph(n, defaultSpec()))
	if err == nil || !strings.Contains(err.Error(), "a launch template named nodes."+testCluster) ||
		!strings.Contains(err.Error(), "is not this cluster's (no tag "+ClusterTag(testCluster)+"=owned)") {
		t.Errorf("err = %v, want the foreign template explained", err)
	}
	if n := srv.Calls()["CreateLaunchTemplate"]; n > 3 {
		t.Errorf("%d CreateLaunchTemplate: the foreign template was retried", n)
	}

	// An Auto Scaling group of the name, someone else's.
	c, srv2 := newTestCloud(t)
	n2 := makeNetwork(t, c)
	lt := foreign(c, "someone-elses")
	if _, err := c.AutoScaling.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String("nodes." + testCluster), MinSize: aws.Int32(0), MaxSize: aws.Int32(0),
		VPCZoneIdentifier: aws.String(n2.subnets[0]),
		LaunchTemplate:    &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(lt), Version: aws.String("1")},
	}); err != nil {
		t.Fatal(err)
	}
	_, err = runOnce(t, c, engine.Apply, clusterGraph(n2, defaultSpec()))
	if err == nil || !strings.Contains(err.Error(), "an Auto Scaling group named nodes."+testCluster+" exists and is not this cluster's") {
		t.Errorf("err = %v, want the foreign group explained", err)
	}
	if n := srv2.Calls()["CreateAutoScalingGroup"]; n > 3 {
		t.Errorf("%d CreateAutoScalingGroup: the foreign group was retried", n)
	}
}

// A newer image matching the pattern does not change the templates by itself; a version made for another reason
// takes it.
func TestLaunchTemplateKeepsItsImageWhileThePatternMatches(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, clusterGraph(n, defaultSpec())))
	running := func() string {
		out, err := c.EC2.DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateName: aws.String("nodes." + testCluster), Versions: []string{"$Default"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.LaunchTemplateVersions[0].LaunchTemplateData.ImageId)
	}
	old := running()
	newer := srv.AddImage("debian-12-amd64-20261201-2000", "x86_64", "2026-12-01T20:00:00.000Z")
	srv.ResetCalls()
	if p := mustRun(t, c, engine.DryRun, clusterGraph(n, defaultSpec())); !p.Empty() {
		t.Errorf("a newer image plans changes: %v", fieldsOf(p))
	}
	if n := srv.Calls()["DescribeImages"]; n != 1 {
		t.Errorf("%d DescribeImages, want 1 (the images the templates run)", n)
	}
	if got := running(); got != old {
		t.Errorf("the template runs %s, want still %s", got, old)
	}

	// The user data changes: the new version runs the newest image.
	s := defaultSpec()
	s.userData = "#!/bin/bash\necho changed\n"
	enginetest.ApplyThenNoChanges(t, context.Background(), c, freshRuns(c, clusterGraph(n, s)))
	if got := running(); got != newer {
		t.Errorf("the new version runs %s, want the newest image %s", got, newer)
	}

	// Another pattern that the running image does not match: a change.
	s.image = "debian-12-arm64"
	if p := mustRun(t, c, engine.DryRun, clusterGraph(n, s)); fieldsOf(p)["LaunchTemplate/nodes."+testCluster] == nil {
		t.Errorf("another pattern plans no change of the template: %v", fieldsOf(p))
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"debian-12-amd64-*", "debian-12-amd64-20261101-2000", true},
		{"debian-12-amd64-*", "debian-12-arm64-20261101-2000", false},
		{"debian-1?-amd64*", "debian-13-amd64-x", true},
		{"*-amd64-*", "debian-12-amd64-1", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
	} {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// templateGraph is one launch template nodes.<cluster> of instance type typ, with the group tag of "nodes".
func templateGraph(n network, typ string) func() *engine.Graph[*Cloud] {
	return func() *engine.Graph[*Cloud] {
		g := engine.NewGraph[*Cloud]()
		validate := engine.WithLifecycle(engine.ExistsAndValidates)
		vpc := engine.Add(g, &VPC{ID: n.vpc}, validate)
		profile := engine.Add(g, &InstanceProfile{Name: n.profile}, validate)
		sg := engine.Add(g, &SecurityGroup{Name: "nodes." + testCluster, VPC: vpc, Tags: map[string]string{ClusterTag(testCluster): "owned"}})
		engine.Add(g, &LaunchTemplate{Name: "nodes." + testCluster, Image: aws.String("debian-12-amd64"), InstanceType: aws.String(typ),
			InstanceProfile: profile, SecurityGroups: []*SecurityGroup{sg}, Tags: map[string]string{testGroupTag: "nodes"},
			UserData: aws.String("#!/bin/sh\n")})
		return g
	}
}

// noteOf is the note of key's change in p, and whether p changes key.
func noteOf(p *engine.Plan, key string) (string, bool) {
	for _, c := range p.Changes {
		if c.Key.String() == key {
			return c.Note, true
		}
	}
	return "", false
}

// A change that makes a new version of a template says its number, the latest's plus one (a version made by
// hand, not the default, counts), and that it becomes the default; the apply makes that version the default. A
// change of the template's own tags makes no version and says none.
func TestLaunchTemplateChangeSaysItsNewVersion(t *testing.T) {
	c, srv := newTestCloud(t)
	ctx := context.Background()
	n := makeNetwork(t, c)
	key := "LaunchTemplate/nodes." + testCluster
	mustRun(t, c, engine.Apply, templateGraph(n, "m6i.large"))
	lts, err := c.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nodes." + testCluster}})
	if err != nil {
		t.Fatal(err)
	}
	id := lts.LaunchTemplates[0].LaunchTemplateId
	// Version 2, by hand, not the default.
	if _, err := c.EC2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: id, SourceVersion: aws.String("1"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{InstanceType: ec2types.InstanceTypeM6iXlarge}}); err != nil {
		t.Fatal(err)
	}

	// The template's own tag changed by hand: retagged, no version.
	if _, err := c.EC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{*id}, Tags: []ec2types.Tag{{Key: aws.String(testGroupTag), Value: aws.String("gpu")}}}); err != nil {
		t.Fatal(err)
	}
	c.NewRun()
	if note, ok := noteOf(mustRun(t, c, engine.DryRun, templateGraph(n, "m6i.large")), key); !ok || note != "" {
		t.Errorf("a change of the template's own tags: changed %v, note %q, want a change without a note", ok, note)
	}
	c.NewRun()
	srv.ResetCalls()
	mustRun(t, c, engine.Apply, templateGraph(n, "m6i.large"))
	if n := srv.Calls()["CreateLaunchTemplateVersion"]; n != 0 {
		t.Errorf("retagging made %d versions", n)
	}

	c.NewRun()
	plan := mustRun(t, c, engine.DryRun, templateGraph(n, "m6i.2xlarge"))
	if note, _ := noteOf(plan, key); note != "new version 3, default 1 -> 3" {
		t.Errorf("the dry run's note %q, want %q", note, "new version 3, default 1 -> 3")
	}
	var text strings.Builder
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := "  " + key + " (new version 3, default 1 -> 3)\n"; !strings.Contains(text.String(), want) {
		t.Errorf("the text plan lacks %q:\n%s", want, text.String())
	}
	c.NewRun()
	mustRun(t, c, engine.Apply, templateGraph(n, "m6i.2xlarge"))
	if v, _ := defaultVersion(t, c, "nodes."+testCluster); v != 3 {
		t.Errorf("default version %d after the apply, want the 3 the plan said", v)
	}
}
