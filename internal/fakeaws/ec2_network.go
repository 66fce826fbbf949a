package fakeaws

import (
	"net/netip"
	"net/url"
	"strings"
)

// VPCs, subnets and security groups. A VPC comes with its security group "default" (which cannot be deleted) and
// its main route table (ec2_routes.go); every group comes with the egress rule to 0.0.0.0/0. Ingress rules are one
// per (protocol, ports, peer), each with its sgr- id, and are described grouped by (protocol, ports) as EC2's
// IpPermissions are.

type vpc struct {
	id, region string
	cidr       netip.Prefix
	defaultSG  string
}

type subnet struct {
	id, region, vpc, zone string
	cidr                  netip.Prefix
	// table is the route table associated with it (AssociateRouteTable); "": the VPC's main table.
	table string
	// hosts is how many addresses were given to instances: the next is the network's address + 4 + hosts (AWS
	// keeps the first four).
	hosts int
}

type secGroup struct {
	id, region, name, desc, vpc string
	ingress, egress             []sgRule
	// invisible is how many more DescribeSecurityGroups and AuthorizeSecurityGroupIngress calls do not know the
	// group (Faults.GroupInvisibleCalls).
	invisible int
}

// hidden reports whether a call does not know g yet (eventual consistency), and counts the call.
func (g *secGroup) hidden() bool {
	if g.invisible > 0 {
		g.invisible--
		return true
	}
	return false
}

type sgRule struct {
	id, proto   string // proto: tcp, udp, icmp or -1
	from, to    int32
	cidr, group string // the peer: one of them
	desc        string
}

// ---- VPCs

type vpcXML struct {
	VpcID           string        `xml:"vpcId"`
	State           string        `xml:"state"`
	CidrBlock       string        `xml:"cidrBlock"`
	DhcpOptionsID   string        `xml:"dhcpOptionsId"`
	InstanceTenancy string        `xml:"instanceTenancy"`
	IsDefault       bool          `xml:"isDefault"`
	OwnerID         string        `xml:"ownerId"`
	Tags            *list[tagXML] `xml:"tagSet"`
	CidrAssocs      list[struct {
		AssociationID string `xml:"associationId"`
		CidrBlock     string `xml:"cidrBlock"`
		State         struct {
			State string `xml:"state"`
		} `xml:"cidrBlockState"`
	}] `xml:"cidrBlockAssociationSet"`
}

func (s *Server) optTags(id string) *list[tagXML] {
	if len(s.ec2.tags[id]) == 0 {
		return nil
	}
	l := s.tagSet(id)
	return &l
}

func (s *Server) vpcXML(v *vpc) vpcXML {
	x := vpcXML{VpcID: v.id, State: "available", CidrBlock: v.cidr.String(), DhcpOptionsID: "dopt-00000000000000001",
		InstanceTenancy: "default", OwnerID: AccountID, Tags: s.optTags(v.id)}
	x.CidrAssocs.Items = make([]struct {
		AssociationID string `xml:"associationId"`
		CidrBlock     string `xml:"cidrBlock"`
		State         struct {
			State string `xml:"state"`
		} `xml:"cidrBlockState"`
	}, 1)
	a := &x.CidrAssocs.Items[0]
	a.AssociationID, a.CidrBlock, a.State.State = "vpc-cidr-assoc-"+strings.TrimPrefix(v.id, "vpc-"), v.cidr.String(), "associated"
	return x
}

// parseCIDR is an IPv4 CIDR block of a VPC or subnet, of /16 to /28.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, errorf("InvalidParameterValue", "Value (%s) for parameter cidrBlock is invalid. This is not a valid CIDR block.", s)
	}
	if p.Bits() < 16 || p.Bits() > 28 {
		return netip.Prefix{}, errorf("InvalidVpc.Range", "The CIDR '%s' is invalid: the netmask must be between /16 and /28.", s)
	}
	return p.Masked(), nil
}

func (s *Server) createVpc(region string, form url.Values) (any, error) {
	c, err := required(form, "CidrBlock")
	if err != nil {
		return nil, err
	}
	cidr, err := parseCIDR(c)
	if err != nil {
		return nil, err
	}
	specs, err := tagSpecs(form, "TagSpecification", "vpc")
	if err != nil {
		return nil, err
	}
	v := &vpc{id: s.newID("vpc"), region: region, cidr: cidr}
	s.ec2.vpcs[v.id] = v
	s.setTags(v.id, specs["vpc"])
	g := &secGroup{id: s.newID("sg"), region: region, name: "default", desc: "default VPC security group", vpc: v.id}
	g.egress = []sgRule{{id: s.newID("sgr"), proto: "-1", cidr: "0.0.0.0/0"}}
	g.ingress = []sgRule{{id: s.newID("sgr"), proto: "-1", group: g.id}}
	s.ec2.groups[g.id] = g
	v.defaultSG = g.id
	s.newRouteTable(v, true)
	return struct {
		RequestID string `xml:"requestId"`
		Vpc       vpcXML `xml:"vpc"`
	}{"fake-request", s.vpcXML(v)}, nil
}

func (s *Server) describeVpcs(region string, form url.Values) (any, error) {
	return describe(form, describer[*vpc, vpcXML]{dialect: ec2Dialect, set: "vpcSet", minMax: 5, maxMax: 1000,
		filters: []string{"vpc-id", "cidr", "cidr-block-association.cidr-block", "state", "is-default", "owner-id"},
		field: fields(func(v *vpc) map[string][]string {
			return map[string][]string{"vpc-id": {v.id}, "cidr": {v.cidr.String()}, "cidr-block-association.cidr-block": {v.cidr.String()},
				"state": {"available"}, "is-default": {"false"}, "owner-id": {AccountID}}
		}),
		tags: func(v *vpc) map[string]string { return s.ec2.tags[v.id] },
		key:  func(v *vpc) string { return v.id },
		item: s.vpcXML,
	}, func() ([]*vpc, func(*vpc) bool, error) {
		return byID(form, ids{"VpcId", "vpc", "InvalidVpcID.Malformed", ""}, func() []*vpc {
			return inIDOrder(s.ec2.vpcs, func(v *vpc) bool { return v.region == region })
		}, func(v *vpc) string { return v.id })
	})
}

func (s *Server) vpc(region, id string) (*vpc, error) {
	if id == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter VpcId")
	}
	v, ok := s.ec2.vpcs[id]
	if !ok || v.region != region {
		return nil, notFound(id)
	}
	return v, nil
}

func (s *Server) deleteVpc(region string, form url.Values) (any, error) {
	v, err := s.vpc(region, form.Get("VpcId"))
	if err != nil {
		return nil, err
	}
	for _, sn := range s.ec2.subnets {
		if sn.vpc == v.id {
			return nil, errorf("DependencyViolation", "The vpc '%s' has dependencies and cannot be deleted (subnet %s).", v.id, sn.id)
		}
	}
	for _, g := range s.ec2.groups {
		if g.vpc == v.id && g.id != v.defaultSG {
			return nil, errorf("DependencyViolation", "The vpc '%s' has dependencies and cannot be deleted (security group %s).", v.id, g.id)
		}
	}
	if dep := s.vpcDependency(v); dep != "" {
		return nil, errorf("DependencyViolation", "The vpc '%s' has dependencies and cannot be deleted (%s).", v.id, dep)
	}
	for _, id := range sortedIDs(s.ec2.routeTables, func(t *routeTable) bool { return t.vpc == v.id }) {
		delete(s.ec2.routeTables, id)
		delete(s.ec2.tags, id)
	}
	delete(s.ec2.groups, v.defaultSG)
	delete(s.ec2.tags, v.defaultSG)
	delete(s.ec2.vpcs, v.id)
	delete(s.ec2.tags, v.id)
	return nil, nil
}

// ---- subnets

type subnetXML struct {
	SubnetID                string        `xml:"subnetId"`
	SubnetArn               string        `xml:"subnetArn"`
	State                   string        `xml:"state"`
	VpcID                   string        `xml:"vpcId"`
	CidrBlock               string        `xml:"cidrBlock"`
	AvailableIPAddressCount int           `xml:"availableIpAddressCount"`
	AvailabilityZone        string        `xml:"availabilityZone"`
	AvailabilityZoneID      string        `xml:"availabilityZoneId"`
	DefaultForAz            bool          `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool          `xml:"mapPublicIpOnLaunch"`
	OwnerID                 string        `xml:"ownerId"`
	Tags                    *list[tagXML] `xml:"tagSet"`
}

func (s *Server) subnetXML(sn *subnet) subnetXML {
	return subnetXML{SubnetID: sn.id, SubnetArn: "arn:aws:ec2:" + sn.region + ":" + AccountID + ":subnet/" + sn.id,
		State: "available", VpcID: sn.vpc, CidrBlock: sn.cidr.String(),
		AvailableIPAddressCount: 1<<(32-sn.cidr.Bits()) - 5 - s.runningIn(sn.id), AvailabilityZone: sn.zone,
		AvailabilityZoneID: zoneID(sn.zone), MapPublicIPOnLaunch: true, OwnerID: AccountID, Tags: s.optTags(sn.id)}
}

// runningIn is how many instances not terminated are in subnet id.
func (s *Server) runningIn(id string) int {
	n := 0
	for _, i := range s.ec2.instances {
		if i.subnet == id && i.state != "terminated" {
			n++
		}
	}
	return n
}

func (s *Server) createSubnet(region string, form url.Values) (any, error) {
	v, err := s.vpc(region, form.Get("VpcId"))
	if err != nil {
		return nil, err
	}
	c, err := required(form, "CidrBlock")
	if err != nil {
		return nil, err
	}
	cidr, err := parseCIDR(c)
	if err != nil {
		return nil, err
	}
	if !v.cidr.Contains(cidr.Addr()) || cidr.Bits() < v.cidr.Bits() {
		return nil, errorf("InvalidSubnet.Range", "The CIDR '%s' is invalid.", c)
	}
	for _, o := range s.ec2.subnets {
		if o.vpc == v.id && o.cidr.Overlaps(cidr) {
			return nil, errorf("InvalidSubnet.Conflict", "The CIDR '%s' conflicts with another subnet", c)
		}
	}
	zone := form.Get("AvailabilityZone")
	if zone == "" {
		zone = region + "a"
	}
	if !validZone(region, zone) {
		return nil, zoneError(zone)
	}
	specs, err := tagSpecs(form, "TagSpecification", "subnet")
	if err != nil {
		return nil, err
	}
	sn := &subnet{id: s.newID("subnet"), region: region, vpc: v.id, zone: zone, cidr: cidr}
	s.ec2.subnets[sn.id] = sn
	s.setTags(sn.id, specs["subnet"])
	return struct {
		RequestID string    `xml:"requestId"`
		Subnet    subnetXML `xml:"subnet"`
	}{"fake-request", s.subnetXML(sn)}, nil
}

func (s *Server) describeSubnets(region string, form url.Values) (any, error) {
	return describe(form, describer[*subnet, subnetXML]{dialect: ec2Dialect, set: "subnetSet", minMax: 5, maxMax: 1000,
		filters: []string{"subnet-id", "vpc-id", "availability-zone", "availability-zone-id", "cidr-block", "cidr", "cidrBlock", "state",
			"default-for-az", "owner-id"},
		field: fields(func(sn *subnet) map[string][]string {
			c := sn.cidr.String()
			return map[string][]string{"subnet-id": {sn.id}, "vpc-id": {sn.vpc}, "availability-zone": {sn.zone},
				"availability-zone-id": {zoneID(sn.zone)}, "cidr-block": {c}, "cidr": {c}, "cidrBlock": {c},
				"state": {"available"}, "default-for-az": {"false"}, "owner-id": {AccountID}}
		}),
		tags: func(sn *subnet) map[string]string { return s.ec2.tags[sn.id] },
		key:  func(sn *subnet) string { return sn.id },
		item: s.subnetXML,
	}, func() ([]*subnet, func(*subnet) bool, error) {
		return byID(form, ids{"SubnetId", "subnet", "InvalidSubnetID.Malformed", ""}, func() []*subnet {
			return inIDOrder(s.ec2.subnets, func(sn *subnet) bool { return sn.region == region })
		}, func(sn *subnet) string { return sn.id })
	})
}

func (s *Server) subnet(region, id string) (*subnet, error) {
	if id == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter SubnetId")
	}
	sn, ok := s.ec2.subnets[id]
	if !ok || sn.region != region {
		return nil, notFound(id)
	}
	return sn, nil
}

func (s *Server) deleteSubnet(region string, form url.Values) (any, error) {
	sn, err := s.subnet(region, form.Get("SubnetId"))
	if err != nil {
		return nil, err
	}
	if s.runningIn(sn.id) > 0 {
		return nil, errorf("DependencyViolation", "The subnet '%s' has dependencies and cannot be deleted.", sn.id)
	}
	delete(s.ec2.subnets, sn.id)
	delete(s.ec2.tags, sn.id)
	return nil, nil
}
