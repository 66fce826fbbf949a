package fakeaws

import (
	"cmp"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Security groups and their rules (see ec2_network.go).

// ---- security groups

type ipRangeXML struct {
	CidrIP      string `xml:"cidrIp"`
	Description string `xml:"description,omitempty"`
}

type groupPairXML struct {
	GroupID     string `xml:"groupId"`
	UserID      string `xml:"userId"`
	Description string `xml:"description,omitempty"`
}

type ipPermissionXML struct {
	IPProtocol string             `xml:"ipProtocol"`
	FromPort   *int32             `xml:"fromPort"`
	ToPort     *int32             `xml:"toPort"`
	Groups     list[groupPairXML] `xml:"groups"`
	IPRanges   list[ipRangeXML]   `xml:"ipRanges"`
	Ipv6Ranges list[struct{}]     `xml:"ipv6Ranges"`
	PrefixList list[struct{}]     `xml:"prefixListIds"`
}

type secGroupXML struct {
	OwnerID     string                `xml:"ownerId"`
	GroupID     string                `xml:"groupId"`
	GroupName   string                `xml:"groupName"`
	Description string                `xml:"groupDescription"`
	VpcID       string                `xml:"vpcId"`
	Arn         string                `xml:"securityGroupArn"`
	Ingress     list[ipPermissionXML] `xml:"ipPermissions"`
	Egress      list[ipPermissionXML] `xml:"ipPermissionsEgress"`
	Tags        *list[tagXML]         `xml:"tagSet"`
}

// permissions groups rules by protocol and ports, in the order of their first rule.
func permissions(rules []sgRule) list[ipPermissionXML] {
	var out list[ipPermissionXML]
	index := map[string]int{}
	for _, r := range rules {
		k := fmt.Sprintf("%s/%d/%d", r.proto, r.from, r.to)
		i, ok := index[k]
		if !ok {
			p := ipPermissionXML{IPProtocol: r.proto}
			if r.proto != "-1" {
				from, to := r.from, r.to
				p.FromPort, p.ToPort = &from, &to
			}
			out.Items = append(out.Items, p)
			i = len(out.Items) - 1
			index[k] = i
		}
		p := &out.Items[i]
		if r.cidr != "" {
			p.IPRanges.Items = append(p.IPRanges.Items, ipRangeXML{r.cidr, r.desc})
		} else {
			p.Groups.Items = append(p.Groups.Items, groupPairXML{r.group, AccountID, r.desc})
		}
	}
	return out
}

func (s *Server) groupXML(g *secGroup) secGroupXML {
	return secGroupXML{OwnerID: AccountID, GroupID: g.id, GroupName: g.name, Description: g.desc, VpcID: g.vpc,
		Arn:     "arn:aws:ec2:" + g.region + ":" + AccountID + ":security-group/" + g.id,
		Ingress: permissions(g.ingress), Egress: permissions(g.egress), Tags: s.optTags(g.id)}
}

func (s *Server) createSecurityGroup(region string, form url.Values) (any, error) {
	name, err := required(form, "GroupName")
	if err != nil {
		return nil, err
	}
	desc, err := required(form, "GroupDescription")
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(name, "sg-") || len(name) > 255 {
		return nil, errorf("InvalidParameterValue", "Invalid value '%s' for groupName: cannot start with sg- nor be longer than 255 characters", name)
	}
	vpcID := form.Get("VpcId")
	if vpcID == "" {
		return nil, errorf("VPCIdNotSpecified", "No default VPC for this user")
	}
	v, err := s.vpc(region, vpcID)
	if err != nil {
		return nil, err
	}
	for _, g := range s.ec2.groups {
		if g.vpc == v.id && g.name == name {
			return nil, errorf("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC '%s'", name, v.id)
		}
	}
	specs, err := tagSpecs(form, "TagSpecification", "security-group")
	if err != nil {
		return nil, err
	}
	g := &secGroup{id: s.newID("sg"), region: region, name: name, desc: desc, vpc: v.id, invisible: s.faults.GroupInvisibleCalls}
	g.egress = []sgRule{{id: s.newID("sgr"), proto: "-1", cidr: "0.0.0.0/0"}}
	s.ec2.groups[g.id] = g
	s.setTags(g.id, specs["security-group"])
	return struct {
		RequestID string        `xml:"requestId"`
		GroupID   string        `xml:"groupId"`
		Arn       string        `xml:"securityGroupArn"`
		Tags      *list[tagXML] `xml:"tagSet"`
	}{"fake-request", g.id, s.groupXML(g).Arn, s.optTags(g.id)}, nil
}

func (s *Server) describeSecurityGroups(region string, form url.Values) (any, error) {
	return describe(form, describer[*secGroup, secGroupXML]{dialect: ec2Dialect, set: "securityGroupInfo", minMax: 5, maxMax: 1000,
		filters: []string{"group-id", "group-name", "vpc-id", "description", "owner-id"},
		field: fields(func(g *secGroup) map[string][]string {
			return map[string][]string{"group-id": {g.id}, "group-name": {g.name}, "vpc-id": {g.vpc}, "description": {g.desc}, "owner-id": {AccountID}}
		}),
		tags: func(g *secGroup) map[string]string { return s.ec2.tags[g.id] },
		key:  func(g *secGroup) string { return g.id },
		item: s.groupXML,
	}, func() ([]*secGroup, func(*secGroup) bool, error) {
		all, byIDs, err := byID(form, ids{"GroupId", "sg", "InvalidGroupId.Malformed", ""}, func() []*secGroup {
			return inIDOrder(s.ec2.groups, func(g *secGroup) bool { return g.region == region && !g.hidden() })
		}, func(g *secGroup) string { return g.id })
		if err != nil {
			return nil, nil, err
		}
		names := strList(form, "GroupName")
		for _, n := range names {
			if !slices.ContainsFunc(all, func(g *secGroup) bool { return g.name == n }) {
				return nil, nil, errorf("InvalidGroup.NotFound", "The security group '%s' does not exist", n)
			}
		}
		return all, func(g *secGroup) bool {
			return (byIDs == nil || byIDs(g)) && (len(names) == 0 || slices.Contains(names, g.name))
		}, nil
	})
}

// group is the security group of a request's GroupId (or GroupName, in the VPC of the request's VpcId if any).
func (s *Server) group(region string, form url.Values) (*secGroup, error) {
	if id := form.Get("GroupId"); id != "" {
		g, ok := s.ec2.groups[id]
		if !ok || g.region != region {
			return nil, notFound(id)
		}
		return g, nil
	}
	name := form.Get("GroupName")
	if name == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter groupName or groupId")
	}
	for _, id := range sortedIDs(s.ec2.groups, func(g *secGroup) bool { return g.region == region }) {
		if g := s.ec2.groups[id]; g.name == name {
			return g, nil
		}
	}
	return nil, errorf("InvalidGroup.NotFound", "The security group '%s' does not exist", name)
}

func (s *Server) deleteSecurityGroup(region string, form url.Values) (any, error) {
	g, err := s.group(region, form)
	if err != nil {
		return nil, err
	}
	if g.name == "default" {
		return nil, errorf("CannotDelete", "the specified group: \"%s\" name: \"default\" cannot be deleted by a user", g.id)
	}
	for _, o := range s.ec2.groups {
		if o.id == g.id {
			continue
		}
		for _, r := range append(append([]sgRule{}, o.ingress...), o.egress...) {
			if r.group == g.id {
				return nil, errorf("DependencyViolation", "resource %s has a dependent object (a rule of %s)", g.id, o.id)
			}
		}
	}
	for _, i := range s.ec2.instances {
		if i.state != "terminated" && slices.Contains(i.groups, g.id) {
			return nil, errorf("DependencyViolation", "resource %s has a dependent object (instance %s)", g.id, i.id)
		}
	}
	delete(s.ec2.groups, g.id)
	delete(s.ec2.tags, g.id)
	return nil, nil
}

// ruleParams are the rules of an Authorize or Revoke: IpPermissions.N (IpRanges.M, Groups.M), or the old
// CidrIp/IpProtocol/FromPort/ToPort/SourceSecurityGroupName form.
func (s *Server) ruleParams(region string, form url.Values, g *secGroup) ([]sgRule, error) {
	type perm struct {
		proto, from, to string
		peers           []sgRule // cidr or group, desc
	}
	var perms []perm
	for _, p := range subPrefixes(form, "IpPermissions") {
		pm := perm{proto: form.Get(p + ".IpProtocol"), from: form.Get(p + ".FromPort"), to: form.Get(p + ".ToPort")}
		for _, r := range subPrefixes(form, p+".IpRanges") {
			pm.peers = append(pm.peers, sgRule{cidr: form.Get(r + ".CidrIp"), desc: form.Get(r + ".Description")})
		}
		for _, r := range subPrefixes(form, p+".Groups") {
			peer := sgRule{group: form.Get(r + ".GroupId"), desc: form.Get(r + ".Description")}
			if peer.group == "" && form.Get(r+".GroupName") != "" {
				pg, err := s.group(region, url.Values{"GroupName": {form.Get(r + ".GroupName")}})
				if err != nil {
					return nil, err
				}
				peer.group = pg.id
			}
			pm.peers = append(pm.peers, peer)
		}
		perms = append(perms, pm)
	}
	if has(form, "IpProtocol") || has(form, "CidrIp") || has(form, "SourceSecurityGroupName") {
		pm := perm{proto: form.Get("IpProtocol"), from: form.Get("FromPort"), to: form.Get("ToPort")}
		if c := form.Get("CidrIp"); c != "" {
			pm.peers = append(pm.peers, sgRule{cidr: c})
		}
		if n := form.Get("SourceSecurityGroupName"); n != "" {
			pg, err := s.group(region, url.Values{"GroupName": {n}})
			if err != nil {
				return nil, err
			}
			pm.peers = append(pm.peers, sgRule{group: pg.id})
		}
		perms = append(perms, pm)
	}
	if len(perms) == 0 {
		return nil, errorf("MissingParameter", "The request must contain the parameter ipPermissions")
	}
	var rules []sgRule
	for _, pm := range perms {
		proto := strings.ToLower(pm.proto)
		switch proto {
		case "all", "-1":
			proto = "-1"
		case "6":
			proto = "tcp"
		case "17":
			proto = "udp"
		case "1":
			proto = "icmp"
		case "tcp", "udp", "icmp":
		default:
			return nil, errorf("InvalidParameterValue", "Invalid value '%s' for IP protocol. Unknown protocol.", pm.proto)
		}
		var from, to int32
		if proto != "-1" {
			f, err1 := strconv.ParseInt(pm.from, 10, 32)
			t, err2 := strconv.ParseInt(pm.to, 10, 32)
			if err1 != nil || err2 != nil {
				return nil, errorf("InvalidParameterValue", "Invalid value for portRange. Must specify both from and to ports with TCP/UDP.")
			}
			from, to = int32(f), int32(t)
			if proto != "icmp" && (from < 0 || to > 65535 || from > to) {
				return nil, errorf("InvalidParameterValue", "Invalid port range (%d to %d)", from, to)
			}
		}
		if len(pm.peers) == 0 {
			return nil, errorf("MissingParameter", "Either a CIDR range or a source security group is required")
		}
		for _, peer := range pm.peers {
			if peer.cidr != "" {
				c, err := netip.ParsePrefix(peer.cidr)
				if err != nil || !c.Addr().Is4() {
					return nil, errorf("InvalidParameterValue", "CIDR block %s is malformed", peer.cidr)
				}
				peer.cidr = c.Masked().String()
			} else if pg, ok := s.ec2.groups[peer.group]; !ok || pg.region != region {
				return nil, notFound(peer.group)
			}
			peer.proto, peer.from, peer.to = proto, from, to
			rules = append(rules, peer)
		}
	}
	return rules, nil
}

func sameRule(a, b sgRule) bool {
	return a.proto == b.proto && a.from == b.from && a.to == b.to && a.cidr == b.cidr && a.group == b.group
}

type sgRuleXML struct {
	RuleID          string `xml:"securityGroupRuleId"`
	GroupID         string `xml:"groupId"`
	GroupOwnerID    string `xml:"groupOwnerId"`
	IsEgress        bool   `xml:"isEgress"`
	IPProtocol      string `xml:"ipProtocol"`
	FromPort        int32  `xml:"fromPort"`
	ToPort          int32  `xml:"toPort"`
	CidrIpv4        string `xml:"cidrIpv4,omitempty"`
	Description     string `xml:"description,omitempty"`
	ReferencedGroup *struct {
		GroupID string `xml:"groupId"`
		UserID  string `xml:"userId"`
	} `xml:"referencedGroupInfo"`
	Arn string `xml:"securityGroupRuleArn"`
}

func ruleXML(g *secGroup, r sgRule, egress bool) sgRuleXML {
	x := sgRuleXML{RuleID: r.id, GroupID: g.id, GroupOwnerID: AccountID, IsEgress: egress, IPProtocol: r.proto,
		FromPort: r.from, ToPort: r.to, CidrIpv4: r.cidr, Description: r.desc,
		Arn: "arn:aws:ec2:" + g.region + ":" + AccountID + ":security-group-rule/" + r.id}
	if r.proto == "-1" {
		x.FromPort, x.ToPort = -1, -1
	}
	if r.group != "" {
		x.ReferencedGroup = &struct {
			GroupID string `xml:"groupId"`
			UserID  string `xml:"userId"`
		}{r.group, AccountID}
	}
	return x
}

func (s *Server) authorizeIngress(region string, form url.Values) (any, error) {
	g, err := s.group(region, form)
	if err != nil {
		return nil, err
	}
	if g.hidden() {
		return nil, errorf("InvalidGroup.NotFound", "The security group '%s' does not exist", cmp.Or(form.Get("GroupId"), form.Get("GroupName")))
	}
	rules, err := s.ruleParams(region, form, g)
	if err != nil {
		return nil, err
	}
	for i, r := range rules {
		dup := false
		for _, o := range append(slices.Clone(g.ingress), rules[:i]...) {
			dup = dup || sameRule(o, r)
		}
		if dup {
			peer := r.cidr + r.group
			return nil, errorf("InvalidPermission.Duplicate", "the specified rule \"peer: %s, %s, from port: %d, to port: %d, ALLOW\" already exists",
				peer, strings.ToUpper(r.proto), r.from, r.to)
		}
	}
	var out []sgRuleXML
	for _, r := range rules {
		r.id = s.newID("sgr")
		g.ingress = append(g.ingress, r)
		out = append(out, ruleXML(g, r, false))
	}
	return struct {
		RequestID string          `xml:"requestId"`
		Return    bool            `xml:"return"`
		Rules     list[sgRuleXML] `xml:"securityGroupRuleSet"`
	}{"fake-request", true, items(out)}, nil
}

func (s *Server) revokeIngress(region string, form url.Values) (any, error) {
	g, err := s.group(region, form)
	if err != nil {
		return nil, err
	}
	var drop []string
	if ids := strList(form, "SecurityGroupRuleId"); len(ids) > 0 {
		for _, id := range ids {
			found := false
			for _, r := range g.ingress {
				found = found || r.id == id
			}
			if !found {
				return nil, errorf("InvalidSecurityGroupRuleId.NotFound", "The security group rule ID '%s' does not exist", id)
			}
		}
		drop = ids
	} else {
		rules, err := s.ruleParams(region, form, g)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			var id string
			for _, o := range g.ingress {
				if sameRule(o, r) {
					id = o.id
				}
			}
			if id == "" {
				return nil, errorf("InvalidPermission.NotFound", "The specified rule does not exist in this security group.")
			}
			drop = append(drop, id)
		}
	}
	var kept []sgRule
	for _, r := range g.ingress {
		if !slices.Contains(drop, r.id) {
			kept = append(kept, r)
		}
	}
	g.ingress = kept
	return struct {
		RequestID string `xml:"requestId"`
		Return    bool   `xml:"return"`
	}{"fake-request", true}, nil
}

func (s *Server) describeSecurityGroupRules(region string, form url.Values) (any, error) {
	key := func(r sgRuleXML) string { return r.GroupID + "/" + r.RuleID }
	return describe(form, describer[sgRuleXML, sgRuleXML]{dialect: ec2Dialect, set: "securityGroupRuleSet", minMax: 5, maxMax: 1000,
		filters: []string{"group-id", "security-group-rule-id"},
		field: fields(func(r sgRuleXML) map[string][]string {
			return map[string][]string{"group-id": {r.GroupID}, "security-group-rule-id": {r.RuleID}}
		}),
		key:  key,
		item: self[sgRuleXML],
	}, func() ([]sgRuleXML, func(sgRuleXML) bool, error) {
		var all []sgRuleXML
		for _, g := range inIDOrder(s.ec2.groups, func(g *secGroup) bool { return g.region == region }) {
			for _, r := range g.ingress {
				all = append(all, ruleXML(g, r, false))
			}
			for _, r := range g.egress {
				all = append(all, ruleXML(g, r, true))
			}
		}
		sort.Slice(all, func(i, j int) bool { return key(all[i]) < key(all[j]) })
		return all, named(strList(form, "SecurityGroupRuleId"), func(r sgRuleXML) string { return r.RuleID }), nil
	})
}
