package fakeaws

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Auto Scaling speaks Query (service "autoscaling"): groups of instances launched from a launch template in
// the zones of their subnets. A group keeps its desired capacity at once, synchronously: creating or updating it
// launches or terminates instances before the answer; an instance of it terminated through EC2 is replaced at
// once. Instances launch from the template version the group names ($Default when none; $Latest and $Default
// are resolved at each launch), spread over the subnets (the one with fewest of the group's instances first, in
// VPCZoneIdentifier order); scaling in terminates the newest instance of the subnet with most. Instances are
// tagged with the template's instance tags, the group's tags to propagate, and aws:autoscaling:groupName. A
// group deleted (ForceDelete, or once empty) is gone at once.

type asgState struct {
	groups map[string]*asGroup // by region/name
}

type asGroup struct {
	name, region, uuid string
	ltID, ltVersion    string // the template (by id) and version as given: a number, $Latest or $Default
	min, max, desired  int32
	subnets            []string
	tags               map[string]asgTag
	created            time.Time
	defaultCooldown    int32
	healthCheckGrace   int32
	healthCheckType    string
	instances          []string // ids, in launch order
}

type asgTag struct {
	value     string
	propagate bool
}

func (s *Server) initASG() {
	s.asg = asgState{groups: map[string]*asGroup{}}
}

type asgHandler func(s *Server, region string, form url.Values) (any, error)

var asgActions = map[string]asgHandler{
	"CreateAutoScalingGroup":       (*Server).createASG,
	"UpdateAutoScalingGroup":       (*Server).updateASG,
	"DeleteAutoScalingGroup":       (*Server).deleteASG,
	"DescribeAutoScalingGroups":    (*Server).describeASGs,
	"SetDesiredCapacity":           (*Server).setDesiredCapacity,
	"CreateOrUpdateTags":           (*Server).createOrUpdateASGTags,
	"DeleteTags":                   (*Server).deleteASGTags,
	"DescribeTags":                 (*Server).describeASGTags,
	"DescribeAutoScalingInstances": (*Server).describeASGInstances,
}

// asgAction runs one Auto Scaling Query action of region with s.mu held.
func (s *Server) asgAction(region, action string, form url.Values) (any, error) {
	h, ok := asgActions[action]
	if !ok {
		return nil, errorf("InvalidAction", "The action %s is not valid for this web service (fakeaws does not implement it).", action)
	}
	return h(s, region, form)
}

func validation(format string, args ...any) *Error { return errorf("ValidationError", format, args...) }

// members is a Query list: <name><member>...</member></name>.
type members[T any] struct {
	Members []T `xml:"member"`
}

// memberList is the list parameter prefix.member.1, prefix.member.2, ...
func memberList(form url.Values, prefix string) []string { return strList(form, prefix+".member") }

func (s *Server) groupByName(region, name string) (*asGroup, error) {
	if name == "" {
		return nil, validation("AutoScalingGroupName is required")
	}
	g, ok := s.asg.groups[region+"/"+name]
	if !ok {
		return nil, validation("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", name)
	}
	return g, nil
}

// groupTemplate checks the LaunchTemplate.* of a request (the template exists and its version can launch
// instances in vpcID) and sets it on g.
func (s *Server) groupTemplate(region string, form url.Values, g *asGroup, vpcID string) error {
	id, name, version := form.Get("LaunchTemplate.LaunchTemplateId"), form.Get("LaunchTemplate.LaunchTemplateName"), form.Get("LaunchTemplate.Version")
	if id != "" && name != "" {
		return validation("Valid requests must contain either launchTemplateId or LaunchTemplateName")
	}
	t, err := s.templateByIDOrName(region, id, name)
	if err == nil && t.asgInvisible > 0 {
		t.asgInvisible-- // Auto Scaling does not know the new template yet
		err = notFound(t.id)
	}
	if err != nil {
		if name != "" {
			return validation("You must use a valid fully-formed launch template. The specified launch template, with template name %s, does not exist.", name)
		}
		return validation("You must use a valid fully-formed launch template. The specified launch template, with template ID %s, does not exist.", id)
	}
	if version == "" {
		version = "$Default"
	}
	v, err := t.version(version)
	if err != nil {
		return validation("You must use a valid fully-formed launch template. %s", err.(*Error).Message)
	}
	if err := s.checkLaunchData(region, vpcID, v.data); err != nil {
		return validation("You must use a valid fully-formed launch template. %s", err.(*Error).Message)
	}
	g.ltID, g.ltVersion = t.id, version
	return nil
}

// groupSubnets are the subnets of a VPCZoneIdentifier, all in one VPC; and that VPC.
func (s *Server) groupSubnets(region, ids string) ([]string, string, error) {
	var out []string
	vpcID := ""
	for _, id := range strings.Split(ids, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		sn, ok := s.ec2.subnets[id]
		if !ok || sn.region != region {
			return nil, "", validation("The subnet ID '%s' does not exist", id)
		}
		if vpcID != "" && sn.vpc != vpcID {
			return nil, "", validation("The subnets '%s' are not all in the same VPC", ids)
		}
		vpcID = sn.vpc
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, "", validation("The subnets of VPCZoneIdentifier are required (fakeaws launches in subnets only)")
	}
	return out, vpcID, nil
}

func sizeParam(form url.Values, key string) (int32, bool, error) {
	n, ok, err := intParam(form, key)
	if err != nil {
		return 0, false, validation("Value '%s' at '%s' is not an integer", form.Get(key), key)
	}
	if ok && n < 0 {
		return 0, false, validation("Value '%d' at '%s' failed to satisfy constraint: Member must have value greater than or equal to 0", n, key)
	}
	return int32(n), ok, nil
}

func checkSizes(min, max, desired int32) error {
	if min > max {
		return validation("Max bound, %d, must be greater than or equal to min bound, %d", max, min)
	}
	if desired < min || desired > max {
		return validation("Desired capacity:%d must be between the specified min size:%d and max size:%d", desired, min, max)
	}
	return nil
}

// tagMembers are the Tags.member.N of a request (ResourceId, ResourceType, Key, Value, PropagateAtLaunch).
type tagMember struct {
	resource, key, value string
	propagate            bool
}

func tagMembers(form url.Values) ([]tagMember, error) {
	var out []tagMember
	for _, p := range subPrefixes(form, "Tags.member") {
		t := tagMember{resource: form.Get(p + ".ResourceId"), key: form.Get(p + ".Key"), value: form.Get(p + ".Value")}
		if t.key == "" {
			return nil, validation("Tag key cannot be empty (%s.Key)", p)
		}
		if strings.HasPrefix(strings.ToLower(t.key), "aws:") {
			return nil, validation("Tag keys starting with 'aws:' are reserved for internal use")
		}
		if rt := form.Get(p + ".ResourceType"); rt != "" && rt != "auto-scaling-group" {
			return nil, validation("Invalid resource type %s: only auto-scaling-group", rt)
		}
		b, _, err := boolParam(form, p+".PropagateAtLaunch")
		if err != nil {
			return nil, validation("Invalid PropagateAtLaunch %q", form.Get(p+".PropagateAtLaunch"))
		}
		t.propagate = b
		out = append(out, t)
	}
	return out, nil
}

func (s *Server) createASG(region string, form url.Values) (any, error) {
	name := form.Get("AutoScalingGroupName")
	if name == "" || len(name) > 255 {
		return nil, validation("AutoScalingGroupName is required (1 to 255 characters)")
	}
	if _, ok := s.asg.groups[region+"/"+name]; ok {
		return nil, errorf("AlreadyExists", "AutoScalingGroup by this name already exists - A group with the name %s already exists", name)
	}
	if !hasUnder(form, "LaunchTemplate") {
		return nil, validation("Valid requests must contain either LaunchTemplate, LaunchConfigurationName, InstanceId or MixedInstancesPolicy parameter (fakeaws: LaunchTemplate only).")
	}
	min, minOK, err := sizeParam(form, "MinSize")
	if err != nil {
		return nil, err
	}
	max, maxOK, err := sizeParam(form, "MaxSize")
	if err != nil {
		return nil, err
	}
	if !minOK || !maxOK {
		return nil, validation("MinSize and MaxSize are required")
	}
	desired, ok, err := sizeParam(form, "DesiredCapacity")
	if err != nil {
		return nil, err
	}
	if !ok {
		desired = min
	}
	if err := checkSizes(min, max, desired); err != nil {
		return nil, err
	}
	subnets, vpcID, err := s.groupSubnets(region, form.Get("VPCZoneIdentifier"))
	if err != nil {
		return nil, err
	}
	g := &asGroup{name: name, region: region, uuid: s.newID("asg"), min: min, max: max, desired: desired, subnets: subnets,
		tags: map[string]asgTag{}, created: time.Now(), defaultCooldown: 300, healthCheckGrace: 300, healthCheckType: "EC2"}
	if err := s.groupTemplate(region, form, g, vpcID); err != nil {
		return nil, err
	}
	tags, err := tagMembers(form)
	if err != nil {
		return nil, err
	}
	for _, t := range tags {
		g.tags[t.key] = asgTag{t.value, t.propagate}
	}
	if v, ok, _ := intParam(form, "DefaultCooldown"); ok {
		g.defaultCooldown = int32(v)
	}
	if v, ok, _ := intParam(form, "HealthCheckGracePeriod"); ok {
		g.healthCheckGrace = int32(v)
	}
	if v := form.Get("HealthCheckType"); v != "" {
		g.healthCheckType = v
	}
	s.asg.groups[region+"/"+name] = g
	s.reconcileGroup(g)
	return nil, nil
}

func (s *Server) updateASG(region string, form url.Values) (any, error) {
	g, err := s.groupByName(region, form.Get("AutoScalingGroupName"))
	if err != nil {
		return nil, err
	}
	next := *g
	min, minOK, err := sizeParam(form, "MinSize")
	if err != nil {
		return nil, err
	}
	max, maxOK, err := sizeParam(form, "MaxSize")
	if err != nil {
		return nil, err
	}
	desired, desiredOK, err := sizeParam(form, "DesiredCapacity")
	if err != nil {
		return nil, err
	}
	if minOK {
		next.min = min
	}
	if maxOK {
		next.max = max
	}
	if desiredOK {
		next.desired = desired
	} else {
		// As in AWS: a new bound carries the desired capacity along.
		next.desired = max32(next.min, min32(next.desired, next.max))
	}
	if err := checkSizes(next.min, next.max, next.desired); err != nil {
		return nil, err
	}
	vpcID := ""
	if sn, ok := s.ec2.subnets[g.subnets[0]]; ok {
		vpcID = sn.vpc
	}
	if z := form.Get("VPCZoneIdentifier"); z != "" {
		if next.subnets, vpcID, err = s.groupSubnets(region, z); err != nil {
			return nil, err
		}
	}
	if hasUnder(form, "LaunchTemplate") {
		if err := s.groupTemplate(region, form, &next, vpcID); err != nil {
			return nil, err
		}
	}
	if v, ok, _ := intParam(form, "DefaultCooldown"); ok {
		next.defaultCooldown = int32(v)
	}
	if v, ok, _ := intParam(form, "HealthCheckGracePeriod"); ok {
		next.healthCheckGrace = int32(v)
	}
	if v := form.Get("HealthCheckType"); v != "" {
		next.healthCheckType = v
	}
	*g = next
	// Instances in subnets the group left are replaced.
	for _, id := range slices.Clone(g.instances) {
		if i := s.ec2.instances[id]; !slices.Contains(g.subnets, i.subnet) {
			s.terminate(i)
		}
	}
	s.reconcileGroup(g)
	return nil, nil
}

func min32(a, b int32) int32 { return min(a, b) }
func max32(a, b int32) int32 { return max(a, b) }

func (s *Server) setDesiredCapacity(region string, form url.Values) (any, error) {
	g, err := s.groupByName(region, form.Get("AutoScalingGroupName"))
	if err != nil {
		return nil, err
	}
	d, ok, err := sizeParam(form, "DesiredCapacity")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, validation("DesiredCapacity is required")
	}
	if d < g.min || d > g.max {
		return nil, validation("New SetDesiredCapacity value %d is below min value %d or above max value %d for the AutoScalingGroup.", d, g.min, g.max)
	}
	g.desired = d
	s.reconcileGroup(g)
	return nil, nil
}

// reconcileGroup forgets the group's terminated instances, then launches or terminates instances until it has
// its desired capacity. A template that cannot launch any more (deleted since) launches nothing.
func (s *Server) reconcileGroup(g *asGroup) {
	s.reconcileGroupInstances(g)
	count := func() map[string]int {
		n := map[string]int{}
		for _, id := range g.instances {
			n[s.ec2.instances[id].subnet]++
		}
		return n
	}
	for int32(len(g.instances)) < g.desired {
		n := count()
		best := g.subnets[0]
		for _, sn := range g.subnets {
			if n[sn] < n[best] {
				best = sn
			}
		}
		if !s.launchInGroup(g, best) {
			return
		}
	}
	for int32(len(g.instances)) > g.desired {
		n := count()
		worst := ""
		for _, sn := range g.subnets {
			if worst == "" || n[sn] > n[worst] {
				worst = sn
			}
		}
		victim := -1
		for k, id := range g.instances {
			if s.ec2.instances[id].subnet == worst || n[worst] == 0 {
				victim = k
			}
		}
		i := s.ec2.instances[g.instances[victim]]
		s.terminate(i)
		g.instances = slices.Delete(g.instances, victim, victim+1)
	}
}

func (s *Server) launchInGroup(g *asGroup, subnetID string) bool {
	t, ok := s.ec2.templates[g.ltID]
	if !ok {
		return false
	}
	v, err := t.version(g.ltVersion)
	if err != nil {
		return false
	}
	sn, ok := s.ec2.subnets[subnetID]
	if !ok {
		return false
	}
	tags := map[string]string{"aws:autoscaling:groupName": g.name, "aws:ec2launchtemplate:id": t.id,
		"aws:ec2launchtemplate:version": strconv.FormatInt(v.number, 10)}
	for k, tg := range g.tags {
		if tg.propagate {
			tags[k] = tg.value
		}
	}
	i, err := s.launch(g.region, sn, v.data, tags)
	if err != nil {
		return false
	}
	i.ltID, i.ltVersion, i.group = t.id, v.number, g.region+"/"+g.name
	g.instances = append(g.instances, i.id)
	return true
}

func (s *Server) deleteASG(region string, form url.Values) (any, error) {
	g, err := s.groupByName(region, form.Get("AutoScalingGroupName"))
	if err != nil {
		return nil, err
	}
	force, _, err := boolParam(form, "ForceDelete")
	if err != nil {
		return nil, validation("Invalid ForceDelete")
	}
	s.reconcileGroupInstances(g)
	if len(g.instances) > 0 && !force {
		return nil, errorf("ResourceInUse", "You cannot delete an AutoScalingGroup while there are instances or pending Spot instance request(s) still in the group.")
	}
	for _, id := range g.instances {
		s.terminate(s.ec2.instances[id])
	}
	delete(s.asg.groups, region+"/"+g.name)
	return nil, nil
}

// reconcileGroupInstances forgets the group's terminated instances.
func (s *Server) reconcileGroupInstances(g *asGroup) {
	var live []string
	for _, id := range g.instances {
		if i, ok := s.ec2.instances[id]; ok && i.state != "terminated" {
			live = append(live, id)
		}
	}
	g.instances = live
}
