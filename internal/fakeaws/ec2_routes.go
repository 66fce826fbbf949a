package fakeaws

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Route tables and internet gateways. A VPC is made with its main route table, which holds the VPC's `local`
// route (its CIDR, target local) and is the table of every subnet that has no table of its own
// (AssociateRouteTable). A route's target is the local network, an internet gateway attached to the table's VPC,
// or an instance of that VPC (as its network interface, eni-<the instance's number>); a route to an instance that
// was terminated is a blackhole, as in EC2, until it is replaced or deleted. A table holds at most
// maxRoutesPerTable routes beside its local one (AWS's default quota, "Routes per route table"). An instance's
// source/destination check is on until ModifyInstanceAttribute turns it off (ec2_instances.go).

// maxRoutesPerTable is AWS's default quota of routes per route table (the local route not counted).
const maxRoutesPerTable = 50

type routeTable struct {
	id, region, vpc string
	main            bool
	routes          []route // the local route first, then in the order they were made
}

type route struct {
	dest     netip.Prefix
	gateway  string // "local" or igw-...
	instance string // i-...
}

type internetGateway struct {
	id, region, vpc string // vpc: attached to it ("": detached)
}

// routeTableXML is a route table as DescribeRouteTables writes it.
type routeTableXML struct {
	RouteTableID string            `xml:"routeTableId"`
	VpcID        string            `xml:"vpcId"`
	OwnerID      string            `xml:"ownerId"`
	Routes       list[routeXML]    `xml:"routeSet"`
	Assocs       list[rtbAssocXML] `xml:"associationSet"`
	Propagating  list[struct{}]    `xml:"propagatingVgwSet"`
	Tags         *list[tagXML]     `xml:"tagSet"`
}

type routeXML struct {
	DestinationCidrBlock string `xml:"destinationCidrBlock"`
	GatewayID            string `xml:"gatewayId,omitempty"`
	InstanceID           string `xml:"instanceId,omitempty"`
	InstanceOwnerID      string `xml:"instanceOwnerId,omitempty"`
	NetworkInterfaceID   string `xml:"networkInterfaceId,omitempty"`
	State                string `xml:"state"`
	Origin               string `xml:"origin"`
}

type rtbAssocXML struct {
	AssociationID string `xml:"routeTableAssociationId"`
	RouteTableID  string `xml:"routeTableId"`
	SubnetID      string `xml:"subnetId,omitempty"`
	Main          bool   `xml:"main"`
	State         struct {
		State string `xml:"state"`
	} `xml:"associationState"`
}

// eniOf is the id of instance id's network interface.
func eniOf(id string) string { return "eni-" + strings.TrimPrefix(id, "i-") }

// assocID is the id of the association of table t with subnet sn ("": the main association).
func assocID(t *routeTable, sn string) string {
	if sn == "" {
		return "rtbassoc-" + strings.TrimPrefix(t.id, "rtb-")
	}
	return "rtbassoc-" + strings.TrimPrefix(sn, "subnet-")
}

// routeState is "active", or "blackhole" for a route to an instance that is no more.
func (s *Server) routeState(r route) string {
	if r.instance != "" {
		if i, ok := s.ec2.instances[r.instance]; !ok || i.state == "terminated" {
			return "blackhole"
		}
	}
	return "active"
}

func (s *Server) routeXML(r route) routeXML {
	x := routeXML{DestinationCidrBlock: r.dest.String(), GatewayID: r.gateway, State: s.routeState(r), Origin: "CreateRoute"}
	if r.gateway == "local" {
		x.Origin = "CreateRouteTable"
	}
	if r.instance != "" {
		x.InstanceID, x.InstanceOwnerID, x.NetworkInterfaceID = r.instance, AccountID, eniOf(r.instance)
	}
	return x
}

// subnetsOf are the subnets associated with table t explicitly, in id order.
func (s *Server) subnetsOf(t *routeTable) []string {
	return sortedIDs(s.ec2.subnets, func(sn *subnet) bool { return sn.table == t.id })
}

func (s *Server) routeTableXML(t *routeTable) routeTableXML {
	x := routeTableXML{RouteTableID: t.id, VpcID: t.vpc, OwnerID: AccountID, Tags: s.optTags(t.id)}
	for _, r := range t.routes {
		x.Routes.Items = append(x.Routes.Items, s.routeXML(r))
	}
	add := func(sn string) {
		a := rtbAssocXML{AssociationID: assocID(t, sn), RouteTableID: t.id, SubnetID: sn, Main: sn == ""}
		a.State.State = "associated"
		x.Assocs.Items = append(x.Assocs.Items, a)
	}
	if t.main {
		add("")
	}
	for _, sn := range s.subnetsOf(t) {
		add(sn)
	}
	return x
}

// newRouteTable makes a route table of VPC v with its local route.
func (s *Server) newRouteTable(v *vpc, main bool) *routeTable {
	t := &routeTable{id: s.newID("rtb"), region: v.region, vpc: v.id, main: main, routes: []route{{dest: v.cidr, gateway: "local"}}}
	s.ec2.routeTables[t.id] = t
	return t
}

func (s *Server) createRouteTable(region string, form url.Values) (any, error) {
	v, err := s.vpc(region, form.Get("VpcId"))
	if err != nil {
		return nil, err
	}
	specs, err := tagSpecs(form, "TagSpecification", "route-table")
	if err != nil {
		return nil, err
	}
	t := s.newRouteTable(v, false)
	s.setTags(t.id, specs["route-table"])
	return struct {
		RequestID  string        `xml:"requestId"`
		RouteTable routeTableXML `xml:"routeTable"`
	}{"fake-request", s.routeTableXML(t)}, nil
}

func (s *Server) describeRouteTables(region string, form url.Values) (any, error) {
	return describe(form, describer[*routeTable, routeTableXML]{dialect: ec2Dialect, set: "routeTableSet", minMax: 5, maxMax: 100,
		filters: []string{"route-table-id", "vpc-id", "owner-id", "association.main", "association.subnet-id",
			"association.route-table-association-id", "association.route-table-id", "route.destination-cidr-block",
			"route.instance-id", "route.gateway-id", "route.state", "route.origin"},
		field: func(t *routeTable, name string) []string {
			x := s.routeTableXML(t)
			var out []string
			for _, a := range x.Assocs.Items {
				switch name {
				case "association.main":
					out = append(out, boolStr(a.Main))
				case "association.subnet-id":
					out = append(out, a.SubnetID)
				case "association.route-table-association-id":
					out = append(out, a.AssociationID)
				case "association.route-table-id":
					out = append(out, a.RouteTableID)
				}
			}
			for _, r := range x.Routes.Items {
				switch name {
				case "route.destination-cidr-block":
					out = append(out, r.DestinationCidrBlock)
				case "route.instance-id":
					out = append(out, r.InstanceID)
				case "route.gateway-id":
					out = append(out, r.GatewayID)
				case "route.state":
					out = append(out, r.State)
				case "route.origin":
					out = append(out, r.Origin)
				}
			}
			switch name {
			case "route-table-id":
				out = []string{t.id}
			case "vpc-id":
				out = []string{t.vpc}
			case "owner-id":
				out = []string{AccountID}
			}
			return out
		},
		tags: func(t *routeTable) map[string]string { return s.ec2.tags[t.id] },
		key:  func(t *routeTable) string { return t.id },
		item: s.routeTableXML,
	}, func() ([]*routeTable, func(*routeTable) bool, error) {
		return byID(form, ids{"RouteTableId", "rtb", "InvalidRouteTableId.Malformed", ""}, func() []*routeTable {
			return inIDOrder(s.ec2.routeTables, func(t *routeTable) bool { return t.region == region })
		}, func(t *routeTable) string { return t.id })
	})
}

// routeTable is table id of region.
func (s *Server) routeTable(region, id string) (*routeTable, error) {
	if id == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter routeTableId")
	}
	if !strings.HasPrefix(id, "rtb-") {
		return nil, errorf("InvalidRouteTableId.Malformed", "Invalid id: \"%s\"", id)
	}
	t, ok := s.ec2.routeTables[id]
	if !ok || t.region != region {
		return nil, notFound(id)
	}
	return t, nil
}

func (s *Server) deleteRouteTable(region string, form url.Values) (any, error) {
	t, err := s.routeTable(region, form.Get("RouteTableId"))
	if err != nil {
		return nil, err
	}
	if t.main || len(s.subnetsOf(t)) > 0 {
		return nil, errorf("DependencyViolation", "The routeTable '%s' has dependencies and cannot be deleted.", t.id)
	}
	delete(s.ec2.routeTables, t.id)
	delete(s.ec2.tags, t.id)
	return nil, nil
}

func (s *Server) associateRouteTable(region string, form url.Values) (any, error) {
	t, err := s.routeTable(region, form.Get("RouteTableId"))
	if err != nil {
		return nil, err
	}
	sn, err := s.subnet(region, form.Get("SubnetId"))
	if err != nil {
		return nil, err
	}
	if sn.vpc != t.vpc {
		return nil, errorf("InvalidParameterValue", "Route table %s and subnet %s belong to different networks", t.id, sn.id)
	}
	if sn.table != "" {
		return nil, errorf("Resource.AlreadyAssociated", "the specified association for route table %s conflicts with an existing association", sn.table)
	}
	sn.table = t.id
	return struct {
		RequestID     string `xml:"requestId"`
		AssociationID string `xml:"associationId"`
		State         struct {
			State string `xml:"state"`
		} `xml:"associationState"`
	}{RequestID: "fake-request", AssociationID: assocID(t, sn.id), State: struct {
		State string `xml:"state"`
	}{"associated"}}, nil
}

func (s *Server) disassociateRouteTable(region string, form url.Values) (any, error) {
	id, err := required(form, "AssociationId")
	if err != nil {
		return nil, err
	}
	for _, sn := range s.ec2.subnets {
		if t, ok := s.ec2.routeTables[sn.table]; ok && t.region == region && assocID(t, sn.id) == id {
			sn.table = ""
			return nil, nil
		}
	}
	return nil, notFound(id)
}

// ---- routes

// routeDest is the route's destination: an IPv4 CIDR block in canonical form.
func routeDest(form url.Values) (netip.Prefix, error) {
	d, err := required(form, "DestinationCidrBlock")
	if err != nil {
		return netip.Prefix{}, err
	}
	p, err := netip.ParsePrefix(d)
	if err != nil || !p.Addr().Is4() || p.Masked() != p {
		return netip.Prefix{}, errorf("InvalidParameterValue", "Value (%s) for parameter destinationCidrBlock is invalid. This is not a valid CIDR block.", d)
	}
	return p, nil
}

// routeTarget is the target of a CreateRoute or ReplaceRoute: exactly one of GatewayId (an internet gateway
// attached to t's VPC) and InstanceId (a running instance of t's VPC).
func (s *Server) routeTarget(region string, t *routeTable, form url.Values) (route, error) {
	gw, inst := form.Get("GatewayId"), form.Get("InstanceId")
	var others []string
	for _, k := range []string{"NatGatewayId", "NetworkInterfaceId", "VpcPeeringConnectionId", "TransitGatewayId", "EgressOnlyInternetGatewayId",
		"LocalGatewayId", "CarrierGatewayId", "CoreNetworkArn", "VpcEndpointId", "DestinationIpv6CidrBlock", "DestinationPrefixListId"} {
		if form.Get(k) != "" {
			others = append(others, k)
		}
	}
	if len(others) > 0 {
		return route{}, errorf("InvalidParameterValue", "fakeaws does not model %s: a route's target is GatewayId or InstanceId, its destination DestinationCidrBlock", strings.Join(others, ", "))
	}
	switch {
	case gw != "" && inst != "":
		return route{}, errorf("InvalidParameterCombination", "The parameter gatewayId cannot be used with the parameter instanceId")
	case gw == "" && inst == "":
		return route{}, errorf("MissingParameter", "The request must contain exactly one of gatewayId, natGatewayId, networkInterfaceId, vpcPeeringConnectionId or instanceId")
	case inst != "":
		if !strings.HasPrefix(inst, "i-") {
			return route{}, errorf("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", inst)
		}
		i, err := s.instance(region, inst)
		if err != nil {
			return route{}, err
		}
		if i.state != "running" {
			return route{}, errorf("IncorrectInstanceState", "The instance '%s' is not in a state from which a route can target it (%s).", i.id, i.state)
		}
		if i.vpc != t.vpc {
			return route{}, errorf("InvalidParameterValue", "Route table %s and network interface %s belong to different networks", t.id, eniOf(i.id))
		}
		return route{instance: i.id}, nil
	}
	if !strings.HasPrefix(gw, "igw-") {
		return route{}, errorf("InvalidGatewayID.NotFound", "The gateway ID '%s' does not exist", gw)
	}
	g, ok := s.ec2.gateways[gw]
	if !ok || g.region != region {
		return route{}, notFound(gw)
	}
	if g.vpc != t.vpc {
		return route{}, errorf("InvalidParameterValue", "route table %s and network gateway %s belong to different networks", t.id, gw)
	}
	return route{gateway: gw}, nil
}

// routeAt is the index of t's route to dest; -1 when there is none.
func (t *routeTable) routeAt(dest netip.Prefix) int {
	for i, r := range t.routes {
		if r.dest == dest {
			return i
		}
	}
	return -1
}

func (s *Server) createRoute(region string, form url.Values) (any, error) {
	t, err := s.routeTable(region, form.Get("RouteTableId"))
	if err != nil {
		return nil, err
	}
	dest, err := routeDest(form)
	if err != nil {
		return nil, err
	}
	r, err := s.routeTarget(region, t, form)
	if err != nil {
		return nil, err
	}
	if t.routeAt(dest) >= 0 {
		return nil, errorf("RouteAlreadyExists", "The route identified by %s already exists.", dest)
	}
	if len(t.routes)-1 >= maxRoutesPerTable {
		return nil, errorf("RouteLimitExceeded", "The maximum number of routes has been reached for route table %s (%d).", t.id, maxRoutesPerTable)
	}
	r.dest = dest
	t.routes = append(t.routes, r)
	return nil, nil
}

// changeable is the index of t's route to dest that a ReplaceRoute or DeleteRoute may change.
func (t *routeTable) changeable(dest netip.Prefix, doing string) (int, error) {
	i := t.routeAt(dest)
	if i < 0 {
		return 0, errorf("InvalidRoute.NotFound", "There is no route defined for '%s' in the route table. Use CreateRoute instead.", dest)
	}
	if t.routes[i].gateway == "local" {
		return 0, errorf("InvalidParameterValue", "cannot %s local route %s in route table %s", doing, dest, t.id)
	}
	return i, nil
}

// existingRoute is the table and the index of the route a ReplaceRoute or DeleteRoute names (doing: "replace",
// "remove").
func (s *Server) existingRoute(region string, form url.Values, doing string) (*routeTable, netip.Prefix, int, error) {
	t, err := s.routeTable(region, form.Get("RouteTableId"))
	if err != nil {
		return nil, netip.Prefix{}, 0, err
	}
	dest, err := routeDest(form)
	if err != nil {
		return nil, netip.Prefix{}, 0, err
	}
	i, err := t.changeable(dest, doing)
	return t, dest, i, err
}

func (s *Server) replaceRoute(region string, form url.Values) (any, error) {
	t, dest, i, err := s.existingRoute(region, form, "replace")
	if err != nil {
		return nil, err
	}
	r, err := s.routeTarget(region, t, form)
	if err != nil {
		return nil, err
	}
	r.dest = dest
	t.routes[i] = r
	return nil, nil
}

func (s *Server) deleteRoute(region string, form url.Values) (any, error) {
	t, _, i, err := s.existingRoute(region, form, "remove")
	if err != nil {
		return nil, err
	}
	t.routes = append(t.routes[:i], t.routes[i+1:]...)
	return nil, nil
}

// ---- internet gateways (what a route to the internet, not kubeup's, needs)

func (s *Server) createInternetGateway(region string, form url.Values) (any, error) {
	specs, err := tagSpecs(form, "TagSpecification", "internet-gateway")
	if err != nil {
		return nil, err
	}
	g := &internetGateway{id: s.newID("igw"), region: region}
	s.ec2.gateways[g.id] = g
	s.setTags(g.id, specs["internet-gateway"])
	return struct {
		RequestID string `xml:"requestId"`
		Gateway   struct {
			ID          string         `xml:"internetGatewayId"`
			OwnerID     string         `xml:"ownerId"`
			Attachments list[struct{}] `xml:"attachmentSet"`
			Tags        *list[tagXML]  `xml:"tagSet"`
		} `xml:"internetGateway"`
	}{RequestID: "fake-request", Gateway: struct {
		ID          string         `xml:"internetGatewayId"`
		OwnerID     string         `xml:"ownerId"`
		Attachments list[struct{}] `xml:"attachmentSet"`
		Tags        *list[tagXML]  `xml:"tagSet"`
	}{ID: g.id, OwnerID: AccountID, Tags: s.optTags(g.id)}}, nil
}

func (s *Server) gateway(region, id string) (*internetGateway, error) {
	if id == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter internetGatewayId")
	}
	g, ok := s.ec2.gateways[id]
	if !ok || g.region != region {
		return nil, notFound(id)
	}
	return g, nil
}

func (s *Server) attachInternetGateway(region string, form url.Values) (any, error) {
	g, err := s.gateway(region, form.Get("InternetGatewayId"))
	if err != nil {
		return nil, err
	}
	v, err := s.vpc(region, form.Get("VpcId"))
	if err != nil {
		return nil, err
	}
	if g.vpc != "" {
		return nil, errorf("Resource.AlreadyAssociated", "resource %s is already attached to network %s", g.id, g.vpc)
	}
	for _, o := range s.ec2.gateways {
		if o.vpc == v.id {
			return nil, errorf("InvalidParameterValue", "Network %s already has an internet gateway attached", v.id)
		}
	}
	g.vpc = v.id
	return nil, nil
}

func (s *Server) detachInternetGateway(region string, form url.Values) (any, error) {
	g, err := s.gateway(region, form.Get("InternetGatewayId"))
	if err != nil {
		return nil, err
	}
	if v := form.Get("VpcId"); g.vpc == "" || g.vpc != v {
		return nil, errorf("Gateway.NotAttached", "resource %s is not attached to network %s", g.id, v)
	}
	g.vpc = ""
	return nil, nil
}

func (s *Server) deleteInternetGateway(region string, form url.Values) (any, error) {
	g, err := s.gateway(region, form.Get("InternetGatewayId"))
	if err != nil {
		return nil, err
	}
	if g.vpc != "" {
		return nil, errorf("DependencyViolation", "The internetGateway '%s' has dependencies and cannot be deleted.", g.id)
	}
	delete(s.ec2.gateways, g.id)
	delete(s.ec2.tags, g.id)
	return nil, nil
}

// vpcDependency is what of VPC v, beside its subnets and security groups, keeps it from being deleted: a route
// table that is not its main one, an internet gateway attached to it; "" when nothing does.
func (s *Server) vpcDependency(v *vpc) string {
	for _, id := range sortedIDs(s.ec2.routeTables, func(t *routeTable) bool { return t.vpc == v.id && !t.main }) {
		return fmt.Sprintf("route table %s", id)
	}
	for _, id := range sortedIDs(s.ec2.gateways, func(g *internetGateway) bool { return g.vpc == v.id }) {
		return fmt.Sprintf("internet gateway %s", id)
	}
	return ""
}
