package fakeaws

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Auto Scaling's answers: groups, instances, tags.

type asgTemplateXML struct {
	LaunchTemplateID   string `xml:"LaunchTemplateId"`
	LaunchTemplateName string `xml:"LaunchTemplateName"`
	Version            string `xml:"Version"`
}

type asgInstanceXML struct {
	InstanceID           string          `xml:"InstanceId"`
	InstanceType         string          `xml:"InstanceType"`
	AvailabilityZone     string          `xml:"AvailabilityZone"`
	LifecycleState       string          `xml:"LifecycleState"`
	HealthStatus         string          `xml:"HealthStatus"`
	LaunchTemplate       *asgTemplateXML `xml:"LaunchTemplate"`
	ProtectedFromScaleIn bool            `xml:"ProtectedFromScaleIn"`
}

type asgTagXML struct {
	ResourceID        string `xml:"ResourceId"`
	ResourceType      string `xml:"ResourceType"`
	Key               string `xml:"Key"`
	Value             string `xml:"Value"`
	PropagateAtLaunch bool   `xml:"PropagateAtLaunch"`
}

type asGroupXML struct {
	Name                   string                   `xml:"AutoScalingGroupName"`
	ARN                    string                   `xml:"AutoScalingGroupARN"`
	LaunchTemplate         *asgTemplateXML          `xml:"LaunchTemplate"`
	MinSize                int32                    `xml:"MinSize"`
	MaxSize                int32                    `xml:"MaxSize"`
	DesiredCapacity        int32                    `xml:"DesiredCapacity"`
	DefaultCooldown        int32                    `xml:"DefaultCooldown"`
	AvailabilityZones      members[string]          `xml:"AvailabilityZones"`
	LoadBalancerNames      members[string]          `xml:"LoadBalancerNames"`
	TargetGroupARNs        members[string]          `xml:"TargetGroupARNs"`
	HealthCheckType        string                   `xml:"HealthCheckType"`
	HealthCheckGracePeriod int32                    `xml:"HealthCheckGracePeriod"`
	Instances              *members[asgInstanceXML] `xml:"Instances"`
	CreatedTime            string                   `xml:"CreatedTime"`
	SuspendedProcesses     members[string]          `xml:"SuspendedProcesses"`
	VPCZoneIdentifier      string                   `xml:"VPCZoneIdentifier"`
	EnabledMetrics         members[string]          `xml:"EnabledMetrics"`
	Tags                   members[asgTagXML]       `xml:"Tags"`
	TerminationPolicies    members[string]          `xml:"TerminationPolicies"`
	NewInstancesProtected  bool                     `xml:"NewInstancesProtectedFromScaleIn"`
	ServiceLinkedRoleARN   string                   `xml:"ServiceLinkedRoleARN"`
	CapacityRebalance      bool                     `xml:"CapacityRebalance"`
}

// groupTemplateXML is how the group names its launch template: id and name, with version.
func (s *Server) groupTemplateXML(g *asGroup, version string) *asgTemplateXML {
	x := &asgTemplateXML{LaunchTemplateID: g.ltID, Version: version}
	if t, ok := s.ec2.templates[g.ltID]; ok {
		x.LaunchTemplateName = t.name
	}
	return x
}

func (s *Server) groupTags(g *asGroup) []asgTagXML {
	var out []asgTagXML
	for _, k := range sortedKeys(g.tags) {
		out = append(out, asgTagXML{g.name, "auto-scaling-group", k, g.tags[k].value, g.tags[k].propagate})
	}
	return out
}

func (s *Server) asgInstanceXML(g *asGroup, i *instance) asgInstanceXML {
	return asgInstanceXML{InstanceID: i.id, InstanceType: i.typ, AvailabilityZone: i.zone, LifecycleState: "InService",
		HealthStatus: "Healthy", LaunchTemplate: s.groupTemplateXML(g, strconv.FormatInt(i.ltVersion, 10))}
}

func (s *Server) asgXML(g *asGroup, withInstances bool) asGroupXML {
	x := asGroupXML{Name: g.name,
		ARN:            "arn:aws:autoscaling:" + g.region + ":" + AccountID + ":autoScalingGroup:" + g.uuid + ":autoScalingGroupName/" + g.name,
		LaunchTemplate: s.groupTemplateXML(g, g.ltVersion), MinSize: g.min, MaxSize: g.max, DesiredCapacity: g.desired,
		DefaultCooldown: g.defaultCooldown, HealthCheckType: g.healthCheckType, HealthCheckGracePeriod: g.healthCheckGrace,
		CreatedTime: timestamp(g.created), VPCZoneIdentifier: strings.Join(g.subnets, ","),
		Tags:                 members[asgTagXML]{s.groupTags(g)},
		TerminationPolicies:  members[string]{[]string{"Default"}},
		ServiceLinkedRoleARN: "arn:aws:iam::" + AccountID + ":role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"}
	var zones []string
	for _, id := range g.subnets {
		if sn, ok := s.ec2.subnets[id]; ok && !slices.Contains(zones, sn.zone) {
			zones = append(zones, sn.zone)
		}
	}
	sort.Strings(zones)
	x.AvailabilityZones.Members = zones
	if withInstances {
		x.Instances = &members[asgInstanceXML]{}
		for _, id := range g.instances {
			x.Instances.Members = append(x.Instances.Members, s.asgInstanceXML(g, s.ec2.instances[id]))
		}
	}
	return x
}

func (s *Server) regionGroups(region string) []*asGroup {
	var out []*asGroup
	for _, key := range sortedKeys(s.asg.groups) {
		if g := s.asg.groups[key]; g.region == region {
			out = append(out, g)
		}
	}
	return out
}

func (s *Server) describeASGs(region string, form url.Values) (any, error) {
	withInstances := form.Get("IncludeInstances") != "false"
	return describe(form, describer[*asGroup, asGroupXML]{dialect: asgDialect, set: "AutoScalingGroups", minMax: 1, maxMax: 100,
		filters: []string{"tag-key", "tag-value"},
		tags: func(g *asGroup) map[string]string {
			tags := map[string]string{}
			for k, t := range g.tags {
				tags[k] = t.value
			}
			return tags
		},
		key: func(g *asGroup) string { return g.name },
		item: func(g *asGroup) asGroupXML {
			s.reconcileGroupInstances(g)
			return s.asgXML(g, withInstances)
		},
	}, func() ([]*asGroup, func(*asGroup) bool, error) {
		names := memberList(form, "AutoScalingGroupNames")
		return s.regionGroups(region), named(names, func(g *asGroup) string { return g.name }), nil
	})
}

func (s *Server) createOrUpdateASGTags(region string, form url.Values) (any, error) {
	tags, err := tagMembers(form)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, validation("Tags is required")
	}
	for _, t := range tags {
		if _, err := s.groupByName(region, t.resource); err != nil {
			return nil, err
		}
	}
	for _, t := range tags {
		g, _ := s.groupByName(region, t.resource)
		g.tags[t.key] = asgTag{t.value, t.propagate}
	}
	return nil, nil
}

func (s *Server) deleteASGTags(region string, form url.Values) (any, error) {
	tags, err := tagMembers(form)
	if err != nil {
		return nil, err
	}
	for _, t := range tags {
		if _, err := s.groupByName(region, t.resource); err != nil {
			return nil, err
		}
	}
	for _, t := range tags {
		g, _ := s.groupByName(region, t.resource)
		delete(g.tags, t.key)
	}
	return nil, nil
}

func (s *Server) describeASGTags(region string, form url.Values) (any, error) {
	return describe(form, describer[asgTagXML, asgTagXML]{dialect: asgDialect, set: "Tags", minMax: 1, maxMax: 100,
		filters: []string{"auto-scaling-group", "key", "value", "propagate-at-launch"},
		field: fields(func(t asgTagXML) map[string][]string {
			return map[string][]string{"auto-scaling-group": {t.ResourceID}, "key": {t.Key}, "value": {t.Value},
				"propagate-at-launch": {boolStr(t.PropagateAtLaunch)}}
		}),
		key:  func(t asgTagXML) string { return t.ResourceID + "\x00" + t.Key },
		item: self[asgTagXML],
	}, func() ([]asgTagXML, func(asgTagXML) bool, error) {
		var all []asgTagXML
		for _, g := range s.regionGroups(region) {
			all = append(all, s.groupTags(g)...)
		}
		return all, nil, nil
	})
}

func (s *Server) describeASGInstances(region string, form url.Values) (any, error) {
	type detailXML struct {
		asgInstanceXML
		GroupName string `xml:"AutoScalingGroupName"`
	}
	return describe(form, describer[detailXML, detailXML]{dialect: asgDialect, set: "AutoScalingInstances", minMax: 1, maxMax: 100,
		key:  func(d detailXML) string { return d.InstanceID },
		item: self[detailXML],
	}, func() ([]detailXML, func(detailXML) bool, error) {
		var all []detailXML
		for _, g := range s.regionGroups(region) {
			s.reconcileGroupInstances(g)
			for _, id := range g.instances {
				all = append(all, detailXML{s.asgInstanceXML(g, s.ec2.instances[id]), g.name})
			}
		}
		sort.Slice(all, func(a, b int) bool { return all[a].InstanceID < all[b].InstanceID })
		return all, named(memberList(form, "InstanceIds"), func(d detailXML) string { return d.InstanceID }), nil
	})
}
