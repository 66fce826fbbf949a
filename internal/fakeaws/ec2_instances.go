package fakeaws

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Instances: launched by Auto Scaling (autoscaling.go) or RunInstances from launch template data, "running" at
// once, with a private address from their subnet (the fifth of it, then the next) and a public one from
// 203.0.113.0/24 then 198.51.100.0/24. They have no root volume of their own (a root device name, /dev/xvda,
// taken): only the volumes attached to them appear in their block device mapping, so DescribeVolumes lists the
// volumes made by CreateVolume alone. A terminated instance is "terminated" at once, its volumes detached, its
// public address gone; it stays in DescribeInstances answers (as in EC2 for a while) but is no instance of
// Instances or IMDS any more.

const rootDevice = "/dev/xvda"

type instance struct {
	id, reservation, region, zone, subnet, vpc string
	image, typ, keyName                        string
	userData                                   string // base64, as given
	privateIP, publicIP                        string
	profileName, profileArn                    string
	groups                                     []string
	state                                      string // running or terminated
	launched                                   time.Time
	// ltID and ltVersion are the launch template (version) it was launched from, if any; group its Auto
	// Scaling group, if any.
	ltID      string
	ltVersion int64
	group     string
	// noSourceDestCheck: its source/destination check is off (ModifyInstanceAttribute), and it forwards
	// packets that are not its own (as a route's target does).
	noSourceDestCheck bool
}

var stateCodes = map[string]int32{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}

type instanceStateXML struct {
	Code int32  `xml:"code"`
	Name string `xml:"name"`
}

func stateXML(name string) instanceStateXML { return instanceStateXML{stateCodes[name], name} }

// instance is instance id of region, or InvalidInstanceID.NotFound.
func (s *Server) instance(region, id string) (*instance, error) {
	if id == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter InstanceId")
	}
	i, ok := s.ec2.instances[id]
	if !ok || i.region != region {
		return nil, notFound(id)
	}
	return i, nil
}

// launch makes a running instance in subnet sn from launch template data d, with tags (over those of d for
// instances). An error when d cannot launch (no image, an image or security group that does not exist).
func (s *Server) launch(region string, sn *subnet, d ltData, tags map[string]string) (*instance, error) {
	if err := s.checkLaunchData(region, sn.vpc, d); err != nil {
		return nil, err
	}
	groups := append([]string{}, d.SecurityGroupIDs...)
	for _, n := range d.GroupNames {
		for _, id := range sortedIDs(s.ec2.groups, func(g *secGroup) bool { return g.region == region && g.vpc == sn.vpc }) {
			if s.ec2.groups[id].name == n {
				groups = append(groups, id)
			}
		}
	}
	if len(groups) == 0 {
		if v := s.ec2.vpcs[sn.vpc]; v != nil && v.defaultSG != "" {
			groups = []string{v.defaultSG}
		}
	}
	i := &instance{id: s.newID("i"), reservation: s.newID("r"), region: region, zone: sn.zone, subnet: sn.id, vpc: sn.vpc,
		image: d.ImageID, typ: d.InstanceType, keyName: d.KeyName, userData: d.UserData, groups: groups,
		profileName: d.ProfileName, profileArn: d.ProfileArn, state: "running", launched: time.Now()}
	if i.typ == "" {
		i.typ = "m1.small"
	}
	if i.profileArn == "" && i.profileName != "" {
		i.profileArn = "arn:aws:iam::" + AccountID + ":instance-profile/" + i.profileName
		if p, ok := s.iam.profiles[i.profileName]; ok {
			i.profileArn = "arn:aws:iam::" + AccountID + ":instance-profile" + p.path + p.name
		}
	}
	// The private address: the fifth of the subnet, then the next (AWS keeps the first four).
	i.privateIP = hostAddr(sn.cidr, 4+sn.hosts).String()
	sn.hosts++
	n := s.ec2.publicIPs
	s.ec2.publicIPs++
	if n < 254 {
		i.publicIP = fmt.Sprintf("203.0.113.%d", n+1)
	} else {
		i.publicIP = fmt.Sprintf("198.51.100.%d", n-254+1)
	}
	s.ec2.instances[i.id] = i
	all := map[string]string{}
	for k, v := range d.TagSpecs["instance"] {
		all[k] = v
	}
	for k, v := range tags {
		all[k] = v
	}
	s.setTags(i.id, all)
	return i, nil
}

// checkLaunchData checks that d can launch instances in vpcID: its image and security groups exist.
func (s *Server) checkLaunchData(region, vpcID string, d ltData) error {
	if d.ImageID == "" {
		return errorf("InvalidParameterValue", "The launch template data has no image id (ImageId).")
	}
	if _, ok := s.ec2.images[d.ImageID]; !ok {
		return notFound(d.ImageID)
	}
	for _, id := range d.SecurityGroupIDs {
		g, ok := s.ec2.groups[id]
		if !ok || g.region != region {
			return notFound(id)
		}
		if vpcID != "" && g.vpc != vpcID {
			return errorf("InvalidParameter", "Security group %s and subnet belong to different networks.", id)
		}
	}
	if d.UserData != "" {
		if _, err := base64.StdEncoding.DecodeString(d.UserData); err != nil {
			return errorf("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
	}
	return nil
}

// terminate terminates instance i: its volumes are detached.
func (s *Server) terminate(i *instance) {
	if i.state == "terminated" {
		return
	}
	i.state = "terminated"
	i.publicIP = ""
	for _, v := range s.ec2.volumes {
		if v.att != nil && v.att.instance == i.id {
			v.att = nil
		}
	}
}

type instanceXML struct {
	InstanceID     string           `xml:"instanceId"`
	ImageID        string           `xml:"imageId"`
	State          instanceStateXML `xml:"instanceState"`
	PrivateDNSName string           `xml:"privateDnsName"`
	DNSName        string           `xml:"dnsName"`
	Reason         string           `xml:"reason"`
	KeyName        string           `xml:"keyName,omitempty"`
	AmiLaunchIndex int32            `xml:"amiLaunchIndex"`
	InstanceType   string           `xml:"instanceType"`
	LaunchTime     string           `xml:"launchTime"`
	Placement      struct {
		AvailabilityZone string `xml:"availabilityZone"`
		Tenancy          string `xml:"tenancy"`
	} `xml:"placement"`
	Monitoring struct {
		State string `xml:"state"`
	} `xml:"monitoring"`
	SubnetID         string `xml:"subnetId"`
	VpcID            string `xml:"vpcId"`
	SourceDestCheck  bool   `xml:"sourceDestCheck"`
	PrivateIPAddress string `xml:"privateIpAddress"`
	IPAddress        string `xml:"ipAddress,omitempty"`
	Groups           list[struct {
		GroupID   string `xml:"groupId"`
		GroupName string `xml:"groupName"`
	}] `xml:"groupSet"`
	Architecture   string `xml:"architecture"`
	RootDeviceType string `xml:"rootDeviceType"`
	RootDeviceName string `xml:"rootDeviceName"`
	BlockDevices   list[struct {
		DeviceName string `xml:"deviceName"`
		Ebs        struct {
			VolumeID            string `xml:"volumeId"`
			Status              string `xml:"status"`
			AttachTime          string `xml:"attachTime"`
			DeleteOnTermination bool   `xml:"deleteOnTermination"`
		} `xml:"ebs"`
	}] `xml:"blockDeviceMapping"`
	VirtualizationType string `xml:"virtualizationType"`
	Hypervisor         string `xml:"hypervisor"`
	Profile            *struct {
		Arn string `xml:"arn"`
		ID  string `xml:"id"`
	} `xml:"iamInstanceProfile"`
	Tags *list[tagXML] `xml:"tagSet"`
}

func (s *Server) instanceXML(i *instance) instanceXML {
	x := instanceXML{InstanceID: i.id, ImageID: i.image, State: stateXML(i.state), KeyName: i.keyName, InstanceType: i.typ,
		LaunchTime: timestamp(i.launched), SubnetID: i.subnet, VpcID: i.vpc, SourceDestCheck: !i.noSourceDestCheck, PrivateIPAddress: i.privateIP, IPAddress: i.publicIP,
		Architecture: "x86_64", RootDeviceType: "ebs", RootDeviceName: rootDevice, VirtualizationType: "hvm", Hypervisor: "xen",
		Tags: s.optTags(i.id)}
	if i.state == "running" {
		x.PrivateDNSName = "ip-" + strings.ReplaceAll(i.privateIP, ".", "-") + ".ec2.internal"
		if i.publicIP != "" {
			x.DNSName = "ec2-" + strings.ReplaceAll(i.publicIP, ".", "-") + ".compute-1.amazonaws.com"
		}
	}
	if im, ok := s.ec2.images[i.image]; ok {
		x.Architecture = im.arch
	}
	x.Placement.AvailabilityZone, x.Placement.Tenancy = i.zone, "default"
	x.Monitoring.State = "disabled"
	for _, g := range i.groups {
		name := ""
		if sg, ok := s.ec2.groups[g]; ok {
			name = sg.name
		}
		x.Groups.Items = append(x.Groups.Items, struct {
			GroupID   string `xml:"groupId"`
			GroupName string `xml:"groupName"`
		}{g, name})
	}
	var vols []*volume
	for _, v := range s.ec2.volumes {
		if v.att != nil && v.att.instance == i.id {
			vols = append(vols, v)
		}
	}
	sort.Slice(vols, func(a, b int) bool { return vols[a].att.device < vols[b].att.device })
	for _, v := range vols {
		var b struct {
			DeviceName string `xml:"deviceName"`
			Ebs        struct {
				VolumeID            string `xml:"volumeId"`
				Status              string `xml:"status"`
				AttachTime          string `xml:"attachTime"`
				DeleteOnTermination bool   `xml:"deleteOnTermination"`
			} `xml:"ebs"`
		}
		b.DeviceName = v.att.device
		b.Ebs.VolumeID, b.Ebs.Status, b.Ebs.AttachTime = v.id, v.att.status(), timestamp(v.att.at)
		x.BlockDevices.Items = append(x.BlockDevices.Items, b)
	}
	if i.profileArn != "" {
		x.Profile = &struct {
			Arn string `xml:"arn"`
			ID  string `xml:"id"`
		}{i.profileArn, "AIPA" + strings.ToUpper(strings.TrimPrefix(i.id, "i-"))}
	}
	return x
}

type reservationXML struct {
	ReservationID string            `xml:"reservationId"`
	OwnerID       string            `xml:"ownerId"`
	Groups        list[struct{}]    `xml:"groupSet"`
	Instances     list[instanceXML] `xml:"instancesSet"`
}

func (s *Server) describeInstances(region string, form url.Values) (any, error) {
	return describe(form, describer[*instance, reservationXML]{dialect: ec2Dialect, set: "reservationSet", minMax: 5, maxMax: 1000,
		filters: []string{"instance-id", "instance-state-name", "instance-state-code", "availability-zone", "subnet-id", "vpc-id",
			"image-id", "instance-type", "private-ip-address", "ip-address", "iam-instance-profile.arn", "instance.group-id",
			"reservation-id", "private-dns-name", "dns-name", "source-dest-check"},
		field: func(i *instance, name string) []string {
			switch name {
			case "instance.group-id":
				return i.groups
			case "iam-instance-profile.arn":
				return []string{i.profileArn}
			}
			x := s.instanceXML(i)
			return map[string][]string{"instance-id": {i.id}, "instance-state-name": {i.state},
				"instance-state-code": {fmt.Sprint(stateCodes[i.state])}, "availability-zone": {i.zone}, "subnet-id": {i.subnet},
				"vpc-id": {i.vpc}, "image-id": {i.image}, "instance-type": {i.typ}, "private-ip-address": {i.privateIP},
				"ip-address": {i.publicIP}, "reservation-id": {i.reservation}, "private-dns-name": {x.PrivateDNSName},
				"dns-name": {x.DNSName}, "source-dest-check": {boolStr(x.SourceDestCheck)}}[name]
		},
		tags: func(i *instance) map[string]string { return s.ec2.tags[i.id] },
		key:  func(i *instance) string { return i.id },
		item: func(i *instance) reservationXML {
			return reservationXML{ReservationID: i.reservation, OwnerID: AccountID, Instances: items([]instanceXML{s.instanceXML(i)})}
		},
	}, func() ([]*instance, func(*instance) bool, error) {
		return byID(form, ids{"InstanceId", "i", "InvalidInstanceID.Malformed", "instancesSet"}, func() []*instance {
			return inIDOrder(s.ec2.instances, func(i *instance) bool { return i.region == region })
		}, func(i *instance) string { return i.id })
	})
}

// runInstances launches MinCount instances (or MaxCount) in SubnetId, from the parameters over the data of the
// launch template given (LaunchTemplate.LaunchTemplateId/Name, Version).
func (s *Server) runInstances(region string, form url.Values) (any, error) {
	if prev, err := s.tokenAnswerFor(region, form); prev != nil || err != nil {
		return prev, err
	}
	var d ltData
	var fromTemplate map[string]string // the tags of an instance launched from a template
	if hasUnder(form, "LaunchTemplate") {
		t, err := s.templateByIDOrName(region, form.Get("LaunchTemplate.LaunchTemplateId"), form.Get("LaunchTemplate.LaunchTemplateName"))
		if err != nil {
			return nil, err
		}
		v, err := t.version(form.Get("LaunchTemplate.Version"))
		if err != nil {
			return nil, err
		}
		d = v.data
		fromTemplate = map[string]string{"aws:ec2launchtemplate:id": t.id, "aws:ec2launchtemplate:version": strconv.FormatInt(v.number, 10)}
	}
	// RunInstances' parameters are named as the launch template data's, at the top.
	top := url.Values{}
	for k, v := range form {
		if !strings.HasPrefix(k, "LaunchTemplate.") {
			top["D."+k] = v
		}
	}
	d, err := parseLTData(top, "D", d)
	if err != nil {
		return nil, err
	}
	n, ok, err := intParam(form, "MinCount")
	if err != nil {
		return nil, err
	}
	if !ok || n < 1 {
		return nil, errorf("MissingParameter", "The request must contain the parameter MinCount (at least 1)")
	}
	sn, err := s.subnet(region, form.Get("SubnetId"))
	if err != nil {
		return nil, err
	}
	if z := form.Get("Placement.AvailabilityZone"); z != "" && z != sn.zone {
		return nil, errorf("InvalidParameterValue", "Subnet %s is in zone %s, not %s", sn.id, sn.zone, z)
	}
	specs, err := tagSpecs(form, "TagSpecification", "instance", "volume", "network-interface")
	if err != nil {
		return nil, err
	}
	if err := s.checkLaunchData(region, sn.vpc, d); err != nil {
		return nil, err
	}
	var xs []instanceXML
	var res string
	for range n {
		tags := map[string]string{}
		maps.Copy(tags, specs["instance"])
		maps.Copy(tags, fromTemplate)
		i, err := s.launch(region, sn, d, tags)
		if err != nil {
			return nil, err
		}
		if res == "" {
			res = i.reservation
		}
		i.reservation = res
		xs = append(xs, s.instanceXML(i))
	}
	answer := struct {
		RequestID     string            `xml:"requestId"`
		ReservationID string            `xml:"reservationId"`
		OwnerID       string            `xml:"ownerId"`
		Groups        list[struct{}]    `xml:"groupSet"`
		Instances     list[instanceXML] `xml:"instancesSet"`
	}{"fake-request", res, AccountID, list[struct{}]{}, items(xs)}
	s.rememberToken(region, form, answer)
	return answer, nil
}

func (s *Server) terminateInstances(region string, form url.Values) (any, error) {
	ids := strList(form, "InstanceId")
	if len(ids) == 0 {
		return nil, errorf("MissingParameter", "The request must contain the parameter InstanceId")
	}
	var is []*instance
	for _, id := range ids {
		i, err := s.instance(region, id)
		if err != nil {
			return nil, err
		}
		is = append(is, i)
	}
	type changeXML struct {
		InstanceID string           `xml:"instanceId"`
		Current    instanceStateXML `xml:"currentState"`
		Previous   instanceStateXML `xml:"previousState"`
	}
	var out []changeXML
	groups := map[string]bool{}
	for _, i := range is {
		prev := i.state
		s.terminate(i)
		out = append(out, changeXML{i.id, stateXML("terminated"), stateXML(prev)})
		if i.group != "" && prev != "terminated" {
			groups[i.group] = true
		}
	}
	// Auto Scaling replaces the instances of its groups that were terminated.
	for _, key := range sortedKeys(groups) {
		if g, ok := s.asg.groups[key]; ok {
			s.reconcileGroup(g)
		}
	}
	return struct {
		RequestID string          `xml:"requestId"`
		Instances list[changeXML] `xml:"instancesSet"`
	}{"fake-request", items(out)}, nil
}

func (s *Server) describeInstanceAttribute(region string, form url.Values) (any, error) {
	i, err := s.instance(region, form.Get("InstanceId"))
	if err != nil {
		return nil, err
	}
	type value struct {
		Value string `xml:"value"`
	}
	answer := struct {
		RequestID    string `xml:"requestId"`
		InstanceID   string `xml:"instanceId"`
		UserData     *value `xml:"userData"`
		InstanceType *value `xml:"instanceType"`
		DisableTerm  *value `xml:"disableApiTermination"`
		SrcDstCheck  *value `xml:"sourceDestCheck"`
		Groups       *list[struct {
			GroupID string `xml:"groupId"`
		}] `xml:"groupSet"`
	}{RequestID: "fake-request", InstanceID: i.id}
	switch a := form.Get("Attribute"); a {
	case "userData":
		answer.UserData = &value{i.userData}
	case "instanceType":
		answer.InstanceType = &value{i.typ}
	case "disableApiTermination":
		answer.DisableTerm = &value{"false"}
	case "sourceDestCheck":
		answer.SrcDstCheck = &value{boolStr(!i.noSourceDestCheck)}
	case "groupSet":
		answer.Groups = &list[struct {
			GroupID string `xml:"groupId"`
		}]{}
		for _, g := range i.groups {
			answer.Groups.Items = append(answer.Groups.Items, struct {
				GroupID string `xml:"groupId"`
			}{g})
		}
	default:
		return nil, errorf("InvalidParameterValue", "Value (%s) for parameter attribute is invalid (fakeaws knows userData, instanceType, disableApiTermination, groupSet, sourceDestCheck)", a)
	}
	return answer, nil
}

// modifyInstanceAttribute changes the one attribute fakeaws models, the source/destination check: as
// SourceDestCheck.Value, or as Attribute=sourceDestCheck with Value. Any other attribute is refused.
func (s *Server) modifyInstanceAttribute(region string, form url.Values) (any, error) {
	i, err := s.instance(region, form.Get("InstanceId"))
	if err != nil {
		return nil, err
	}
	key := "SourceDestCheck.Value"
	if a := form.Get("Attribute"); a != "" {
		if a != "sourceDestCheck" {
			return nil, errorf("InvalidParameterValue", "Value (%s) for parameter attribute is invalid (fakeaws models sourceDestCheck only)", a)
		}
		key = "Value"
	}
	for k := range form {
		if k != "Action" && k != "Version" && k != "InstanceId" && k != "Attribute" && k != key {
			return nil, errorf("InvalidParameterCombination", "fakeaws models the attribute sourceDestCheck only, not %s", k)
		}
	}
	on, ok, err := boolParam(form, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf("MissingParameter", "The request must contain the parameter %s", key)
	}
	if i.state == "terminated" {
		return nil, errorf("IncorrectInstanceState", "The instance '%s' is not in a state from which it can be modified.", i.id)
	}
	i.noSourceDestCheck = !on
	return nil, nil
}

// identity is what IMDS tells instance i.
func identity(i *instance) Identity {
	ud, _ := base64.StdEncoding.DecodeString(i.userData)
	return Identity{InstanceID: i.id, Region: i.region, Zone: i.zone, PrivateIP: i.privateIP, PublicIP: i.publicIP,
		ImageID: i.image, InstanceType: i.typ, UserData: string(ud)}
}

// instanceIdentity is what IMDS says of instance id; false when there is no such running instance. With id "",
// the instance chosen (ChooseIMDSInstance), else the newest running instance. Call it with s.mu held.
func (s *Server) instanceIdentity(id string) (Identity, bool) {
	if id == "" {
		id = s.imdsInstance
	}
	if id == "" {
		for _, i := range s.ec2.instances {
			if i.state == "running" && i.id > id {
				id = i.id
			}
		}
	}
	i, ok := s.ec2.instances[id]
	if !ok || i.state != "running" {
		return Identity{}, false
	}
	return identity(i), true
}

// Instances are the running instances of every region, in id (launch) order.
func (s *Server) Instances() []Identity {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Identity
	for _, id := range sortedIDs(s.ec2.instances, func(i *instance) bool { return i.state == "running" }) {
		out = append(out, identity(s.ec2.instances[id]))
	}
	return out
}

// hostAddr is the address n of prefix p (0: the network's).
func hostAddr(p netip.Prefix, n int) netip.Addr {
	a := p.Addr()
	for range n {
		a = a.Next()
	}
	return a
}
