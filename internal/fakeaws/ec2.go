package fakeaws

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// EC2 speaks Query (service "ec2"): volumes and attachments (ec2_volumes.go), VPCs and subnets (ec2_network.go),
// route tables, routes and internet gateways (ec2_routes.go), security groups (ec2_security_groups.go), images
// (ec2_images.go), launch templates (ec2_templates.go), instances (ec2_instances.go), and here tags, zones and regions; what the actions share (parameters, client
// tokens, filter matching, pages) is in ec2_params.go, and the Describe* list through describe.go.
//
// Every resource belongs to the region of the request that made it and is invisible from the others; the regions'
// zones are <region>a to <region>f, whatever the region's name. IDs are <prefix>-<17 hex digits> (vol-, vpc-,
// subnet-, sg-, sgr-, lt-, ami-, i-, r-, rtb-, igw-), in creation order, so they sort as they were made.

type ec2State struct {
	volumes   map[string]*volume
	vpcs      map[string]*vpc
	subnets   map[string]*subnet
	groups    map[string]*secGroup
	images    map[string]*image
	templates map[string]*launchTemplate
	instances map[string]*instance
	// routeTables and gateways are the VPCs' route tables and internet gateways (ec2_routes.go).
	routeTables map[string]*routeTable
	gateways    map[string]*internetGateway
	// tags are every resource's tags, by resource id.
	tags map[string]map[string]string
	// tokens remember the answers of the actions that take a ClientToken, by action, region and token.
	tokens map[string]tokenAnswer
	// publicIPs counts the public addresses given out.
	publicIPs int
}

type tokenAnswer struct {
	params string // the request's parameters but the token, encoded: the same token with others is a mismatch
	answer any
}

func (s *Server) initEC2() {
	s.ec2 = ec2State{
		volumes: map[string]*volume{}, vpcs: map[string]*vpc{}, subnets: map[string]*subnet{},
		groups: map[string]*secGroup{}, images: map[string]*image{}, templates: map[string]*launchTemplate{},
		instances: map[string]*instance{}, routeTables: map[string]*routeTable{}, gateways: map[string]*internetGateway{},
		tags: map[string]map[string]string{}, tokens: map[string]tokenAnswer{},
	}
	s.seedImages()
}

type ec2Handler func(s *Server, region string, form url.Values) (any, error)

var ec2Actions = map[string]ec2Handler{
	"CreateTags":                     (*Server).createTags,
	"DeleteTags":                     (*Server).deleteTags,
	"DescribeTags":                   (*Server).describeTags,
	"DescribeAvailabilityZones":      (*Server).describeAvailabilityZones,
	"DescribeRegions":                (*Server).describeRegions,
	"CreateVolume":                   (*Server).createVolume,
	"DescribeVolumes":                (*Server).describeVolumes,
	"DeleteVolume":                   (*Server).deleteVolume,
	"ModifyVolume":                   (*Server).modifyVolume,
	"AttachVolume":                   (*Server).attachVolume,
	"DetachVolume":                   (*Server).detachVolume,
	"CreateVpc":                      (*Server).createVpc,
	"DescribeVpcs":                   (*Server).describeVpcs,
	"DeleteVpc":                      (*Server).deleteVpc,
	"CreateSubnet":                   (*Server).createSubnet,
	"DescribeSubnets":                (*Server).describeSubnets,
	"DeleteSubnet":                   (*Server).deleteSubnet,
	"CreateSecurityGroup":            (*Server).createSecurityGroup,
	"DescribeSecurityGroups":         (*Server).describeSecurityGroups,
	"DeleteSecurityGroup":            (*Server).deleteSecurityGroup,
	"AuthorizeSecurityGroupIngress":  (*Server).authorizeIngress,
	"RevokeSecurityGroupIngress":     (*Server).revokeIngress,
	"DescribeSecurityGroupRules":     (*Server).describeSecurityGroupRules,
	"DescribeImages":                 (*Server).describeImages,
	"CreateLaunchTemplate":           (*Server).createLaunchTemplate,
	"CreateLaunchTemplateVersion":    (*Server).createLaunchTemplateVersion,
	"ModifyLaunchTemplate":           (*Server).modifyLaunchTemplate,
	"DescribeLaunchTemplates":        (*Server).describeLaunchTemplates,
	"DescribeLaunchTemplateVersions": (*Server).describeLaunchTemplateVersions,
	"DeleteLaunchTemplate":           (*Server).deleteLaunchTemplate,
	"DescribeInstances":              (*Server).describeInstances,
	"RunInstances":                   (*Server).runInstances,
	"TerminateInstances":             (*Server).terminateInstances,
	"DescribeInstanceAttribute":      (*Server).describeInstanceAttribute,
	"ModifyInstanceAttribute":        (*Server).modifyInstanceAttribute,
	"CreateRouteTable":               (*Server).createRouteTable,
	"DescribeRouteTables":            (*Server).describeRouteTables,
	"DeleteRouteTable":               (*Server).deleteRouteTable,
	"AssociateRouteTable":            (*Server).associateRouteTable,
	"DisassociateRouteTable":         (*Server).disassociateRouteTable,
	"CreateRoute":                    (*Server).createRoute,
	"ReplaceRoute":                   (*Server).replaceRoute,
	"DeleteRoute":                    (*Server).deleteRoute,
	"CreateInternetGateway":          (*Server).createInternetGateway,
	"AttachInternetGateway":          (*Server).attachInternetGateway,
	"DetachInternetGateway":          (*Server).detachInternetGateway,
	"DeleteInternetGateway":          (*Server).deleteInternetGateway,
}

// ec2Action runs one EC2 Query action of region with s.mu held.
func (s *Server) ec2Action(region, action string, form url.Values) (any, error) {
	h, ok := ec2Actions[action]
	if !ok {
		return nil, errorf("InvalidAction", "The action %s is not valid for this web service (fakeaws does not implement it).", action)
	}
	if form.Get("DryRun") == "true" {
		return nil, errorf("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	return h(s, region, form)
}

// ---- the answers' building blocks

// list is an EC2 list: <name><item>...</item></name>. Always written, empty or not, as EC2 does.
type list[T any] struct {
	Items []T `xml:"item"`
}

func items[T any](xs []T) list[T] { return list[T]{Items: xs} }

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

// tagSet is the tags of resource id, sorted by key.
func (s *Server) tagSet(id string) list[tagXML] {
	return tagList(s.ec2.tags[id])
}

func tagList(m map[string]string) list[tagXML] {
	var l list[tagXML]
	for _, k := range sortedKeys(m) {
		l.Items = append(l.Items, tagXML{k, m[k]})
	}
	return l
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// awsTime is how EC2 and Auto Scaling write times.
const awsTime = "2006-01-02T15:04:05.000Z"

func timestamp(t time.Time) string { return t.UTC().Format(awsTime) }

// ---- tags

// resourceType is the EC2 resource type of an id of region that exists; "" when there is no such resource.
func (s *Server) resourceType(region, id string) string {
	prefix, _, _ := strings.Cut(id, "-")
	e := &s.ec2
	var r string
	var found bool
	switch prefix {
	case "vol":
		v, ok := e.volumes[id]
		found, r = ok && v.region == region, "volume"
	case "vpc":
		v, ok := e.vpcs[id]
		found, r = ok && v.region == region, "vpc"
	case "subnet":
		v, ok := e.subnets[id]
		found, r = ok && v.region == region, "subnet"
	case "sg":
		v, ok := e.groups[id]
		found, r = ok && v.region == region, "security-group"
	case "lt":
		v, ok := e.templates[id]
		found, r = ok && v.region == region, "launch-template"
	case "i":
		v, ok := e.instances[id]
		found, r = ok && v.region == region, "instance"
	case "ami":
		_, found = e.images[id]
		r = "image"
	case "rtb":
		v, ok := e.routeTables[id]
		found, r = ok && v.region == region, "route-table"
	case "igw":
		v, ok := e.gateways[id]
		found, r = ok && v.region == region, "internet-gateway"
	}
	if !found {
		return ""
	}
	return r
}

// notFound is the error of an id of a resource that does not exist.
func notFound(id string) *Error {
	prefix, _, _ := strings.Cut(id, "-")
	switch prefix {
	case "vol":
		return errorf("InvalidVolume.NotFound", "The volume '%s' does not exist.", id)
	case "vpc":
		return errorf("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", id)
	case "subnet":
		return errorf("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
	case "sg":
		return errorf("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	case "lt":
		return errorf("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	case "i":
		return errorf("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	case "ami":
		return errorf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
	case "rtb":
		return errorf("InvalidRouteTableID.NotFound", "The routeTable ID '%s' does not exist", id)
	case "igw":
		return errorf("InvalidInternetGatewayID.NotFound", "The internetGateway ID '%s' does not exist", id)
	case "rtbassoc":
		return errorf("InvalidAssociationID.NotFound", "The association ID '%s' does not exist", id)
	}
	return errorf("InvalidID", "The ID '%s' is not valid", id)
}

func (s *Server) setTags(id string, tags map[string]string) {
	if len(tags) == 0 {
		return
	}
	if s.ec2.tags[id] == nil {
		s.ec2.tags[id] = map[string]string{}
	}
	for k, v := range tags {
		s.ec2.tags[id][k] = v
	}
}

func (s *Server) createTags(region string, form url.Values) (any, error) {
	ids := strList(form, "ResourceId")
	if len(ids) == 0 {
		return nil, errorf("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	tags, err := tagParams(form, "Tag")
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if s.resourceType(region, id) == "" {
			return nil, notFound(id)
		}
	}
	for _, id := range ids {
		if len(s.ec2.tags[id])+len(tags) > 50 {
			return nil, errorf("TagLimitExceeded", "The maximum number of tags (50) on resource %s would be exceeded", id)
		}
		s.setTags(id, tags)
	}
	return nil, nil
}

func (s *Server) deleteTags(region string, form url.Values) (any, error) {
	ids := strList(form, "ResourceId")
	if len(ids) == 0 {
		return nil, errorf("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	for _, id := range ids {
		if s.resourceType(region, id) == "" {
			return nil, notFound(id)
		}
	}
	tagPrefixes := subPrefixes(form, "Tag")
	for _, id := range ids {
		tags := s.ec2.tags[id]
		if len(tagPrefixes) == 0 { // no tags named: all of them
			delete(s.ec2.tags, id)
			continue
		}
		for _, p := range tagPrefixes {
			k := form.Get(p + ".Key")
			if v, ok := tags[k]; ok && (!has(form, p+".Value") || form.Get(p+".Value") == v) {
				delete(tags, k)
			}
		}
	}
	return nil, nil
}

type tagDescription struct {
	ResourceID   string `xml:"resourceId"`
	ResourceType string `xml:"resourceType"`
	Key          string `xml:"key"`
	Value        string `xml:"value"`
}

func (s *Server) describeTags(region string, form url.Values) (any, error) {
	return describe(form, describer[tagDescription, tagDescription]{dialect: ec2Dialect, set: "tagSet", minMax: 5, maxMax: 1000,
		filters: []string{"resource-id", "resource-type", "key", "value"},
		field: fields(func(d tagDescription) map[string][]string {
			return map[string][]string{"resource-id": {d.ResourceID}, "resource-type": {d.ResourceType}, "key": {d.Key}, "value": {d.Value}}
		}),
		key:  func(d tagDescription) string { return d.ResourceID + "\x00" + d.Key },
		item: self[tagDescription],
	}, func() ([]tagDescription, func(tagDescription) bool, error) {
		var all []tagDescription
		for _, id := range sortedKeys(s.ec2.tags) {
			if rt := s.resourceType(region, id); rt != "" {
				tags := s.ec2.tags[id]
				for _, k := range sortedKeys(tags) {
					all = append(all, tagDescription{id, rt, k, tags[k]})
				}
			}
		}
		return all, nil, nil
	})
}

// ---- zones and regions

// zoneLetters are the zones of every region: <region>a to <region>f.
const zoneLetters = "abcdef"

// validZone reports whether zone is one of region's.
func validZone(region, zone string) bool {
	rest, ok := strings.CutPrefix(zone, region)
	return ok && len(rest) == 1 && strings.Contains(zoneLetters, rest)
}

func zoneError(zone string) *Error {
	return errorf("InvalidParameterValue", "Invalid availability zone: [%s]", zone)
}

// zoneID is a zone's id: use1-az1 for us-east-1a.
func zoneID(zone string) string {
	region, letter := zone[:len(zone)-1], zone[len(zone)-1:]
	parts := strings.Split(region, "-")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i == 0:
			b.WriteString(p)
		case i == len(parts)-1:
			b.WriteString(p)
		case p != "":
			b.WriteByte(p[0])
		}
	}
	return fmt.Sprintf("%s-az%d", b.String(), strings.Index(zoneLetters, letter)+1)
}

type zoneXML struct {
	ZoneName           string `xml:"zoneName"`
	ZoneID             string `xml:"zoneId"`
	ZoneState          string `xml:"zoneState"`
	RegionName         string `xml:"regionName"`
	ZoneType           string `xml:"zoneType"`
	OptInStatus        string `xml:"optInStatus"`
	GroupName          string `xml:"groupName"`
	NetworkBorderGroup string `xml:"networkBorderGroup"`
	Messages           list[struct {
		Message string `xml:"message"`
	}] `xml:"messageSet"`
}

func (s *Server) describeAvailabilityZones(region string, form url.Values) (any, error) {
	filters, err := ec2Dialect.filtersOf(form, []string{"zone-name", "zone-id", "region-name", "state", "zone-type", "group-name", "opt-in-status"})
	if err != nil {
		return nil, err
	}
	names, ids := strList(form, "ZoneName"), strList(form, "ZoneId")
	for _, n := range names {
		if !validZone(region, n) {
			return nil, errorf("InvalidParameterValue", "The zone '%s' does not exist in the region %s", n, region)
		}
	}
	var out []zoneXML
	for _, l := range zoneLetters {
		z := zoneXML{ZoneName: region + string(l), ZoneState: "available", RegionName: region, ZoneType: "availability-zone",
			OptInStatus: "opt-in-not-required", GroupName: region, NetworkBorderGroup: region}
		z.ZoneID = zoneID(z.ZoneName)
		if len(names) > 0 && !slices.Contains(names, z.ZoneName) || len(ids) > 0 && !slices.Contains(ids, z.ZoneID) {
			continue
		}
		if !matches(filters, nil, func(name string) []string {
			return map[string][]string{"zone-name": {z.ZoneName}, "zone-id": {z.ZoneID}, "region-name": {region},
				"state": {"available"}, "zone-type": {z.ZoneType}, "group-name": {region}, "opt-in-status": {z.OptInStatus}}[name]
		}) {
			continue
		}
		out = append(out, z)
	}
	return struct {
		RequestID string        `xml:"requestId"`
		Zones     list[zoneXML] `xml:"availabilityZoneInfo"`
	}{"fake-request", items(out)}, nil
}

// regions are the regions DescribeRegions lists (any other name works too, as the request's region).
var regions = []string{"eu-central-1", "eu-west-1", "eu-west-2", "us-east-1", "us-east-2", "us-west-1", "us-west-2"}

func (s *Server) describeRegions(region string, form url.Values) (any, error) {
	filters, err := ec2Dialect.filtersOf(form, []string{"region-name", "endpoint", "opt-in-status"})
	if err != nil {
		return nil, err
	}
	names := strList(form, "RegionName")
	type regionXML struct {
		RegionName  string `xml:"regionName"`
		Endpoint    string `xml:"regionEndpoint"`
		OptInStatus string `xml:"optInStatus"`
	}
	var out []regionXML
	all := regions
	if !slices.Contains(all, region) {
		all = append(slices.Clone(all), region)
		sort.Strings(all)
	}
	for _, r := range all {
		x := regionXML{r, "ec2." + r + ".amazonaws.com", "opt-in-not-required"}
		if len(names) > 0 && !slices.Contains(names, r) {
			continue
		}
		if matches(filters, nil, func(name string) []string {
			return map[string][]string{"region-name": {r}, "endpoint": {x.Endpoint}, "opt-in-status": {x.OptInStatus}}[name]
		}) {
			out = append(out, x)
		}
	}
	return struct {
		RequestID string          `xml:"requestId"`
		Regions   list[regionXML] `xml:"regionInfo"`
	}{"fake-request", items(out)}, nil
}

// sortedIDs is the keys of a map of resources of region, in id order.
func sortedIDs[T any](m map[string]T, inRegion func(T) bool) []string {
	var out []string
	for id, v := range m {
		if inRegion(v) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
