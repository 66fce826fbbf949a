package fakegce

import (
	"net/http"
	"net/netip"
	"regexp"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

var (
	labelKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

func lastElem(link string) string { return link[strings.LastIndex(link, "/")+1:] }

func trimBase(link string) string { return strings.TrimPrefix(link, computeBase) }

func insertNetwork(c *call) (any, error) {
	var n compute.Network
	if err := c.decode(&n); err != nil {
		return nil, err
	}
	if err := checkName("resource.name", n.Name); err != nil {
		return nil, err
	}
	if _, ok := c.p.networks[n.Name]; ok {
		return nil, alreadyExists(c.thing("networks", n.Name))
	}
	n.Kind, n.Id, n.CreationTimestamp, n.SelfLink = "compute#network", c.s.newID(), now(), c.p.link("global", "networks", n.Name)
	if n.RoutingConfig == nil {
		n.RoutingConfig = &compute.NetworkRoutingConfig{RoutingMode: "REGIONAL"}
	}
	if n.Mtu == 0 {
		n.Mtu = 1460
	}
	n.Subnetworks = nil
	c.p.networks[n.Name] = &n
	return c.newOp("insert", n.SelfLink, n.Id)
}

func getNetwork(c *call) (any, error) {
	n, ok := c.p.networks[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("networks", c.names[0]))
	}
	return n, nil
}

func listNetworks(c *call) (any, error) {
	out, next, err := page(c, c.p.networks, nil)
	return &compute.NetworkList{Kind: "compute#networkList", Items: out, NextPageToken: next, SelfLink: c.p.link("global", "networks")}, err
}

func deleteNetwork(c *call) (any, error) {
	n, ok := c.p.networks[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("networks", c.names[0]))
	}
	for _, s := range c.p.subnetworks {
		if s.Network == n.SelfLink {
			return nil, errorf(http.StatusBadRequest, "resourceInUseByAnotherResource",
				"The network resource '%s' is already being used by '%s'", c.thing("networks", n.Name), trimBase(s.SelfLink))
		}
	}
	for _, f := range c.p.firewalls {
		if f.Network == n.SelfLink {
			return nil, errorf(http.StatusBadRequest, "resourceInUseByAnotherResource",
				"The network resource '%s' is already being used by '%s'", c.thing("networks", n.Name), trimBase(f.SelfLink))
		}
	}
	if r := c.p.routeUsing(n.SelfLink); r != nil {
		return nil, errorf(http.StatusBadRequest, "resourceInUseByAnotherResource",
			"The network resource '%s' is already being used by '%s'", c.thing("networks", n.Name), trimBase(r.SelfLink))
	}
	delete(c.p.networks, n.Name)
	return c.newOp("delete", n.SelfLink, n.Id)
}

// networkRef resolves a reference to a network of the project.
func (c *call) networkRef(field, s string) (*compute.Network, error) {
	if s == "" {
		s = "default"
	}
	r, err := c.parseRef(s, "networks", "global", "")
	if err != nil {
		return nil, err
	}
	n, ok := c.p.networks[r.name]
	if !ok || r.project != c.p.name {
		return nil, notFound(r.path())
	}
	return n, nil
}

func insertSubnetwork(c *call) (any, error) {
	var s compute.Subnetwork
	if err := c.decode(&s); err != nil {
		return nil, err
	}
	if err := checkName("resource.name", s.Name); err != nil {
		return nil, err
	}
	k := key(c.where, s.Name)
	if _, ok := c.p.subnetworks[k]; ok {
		return nil, alreadyExists(c.thing("subnetworks", s.Name))
	}
	n, err := c.networkRef("resource.network", s.Network)
	if err != nil {
		return nil, err
	}
	prefix, err := netip.ParsePrefix(s.IpCidrRange)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 29 || prefix.Masked() != prefix {
		return nil, invalid("Invalid value for field 'resource.ipCidrRange': '%s'. Invalid IPCidrRange.", s.IpCidrRange)
	}
	for _, other := range c.p.subnetworks {
		if other.Network == n.SelfLink {
			if o, err := netip.ParsePrefix(other.IpCidrRange); err == nil && o.Overlaps(prefix) {
				return nil, invalid("Invalid IPCidrRange: %s conflicts with existing subnetwork '%s' in region '%s'.",
					s.IpCidrRange, other.Name, lastElem(other.Region))
			}
		}
	}
	s.Kind, s.Id, s.CreationTimestamp = "compute#subnetwork", c.s.newID(), now()
	s.Network, s.Region, s.SelfLink = n.SelfLink, c.scopeLink(), c.p.link("regions", c.where, "subnetworks", s.Name)
	s.GatewayAddress = prefix.Addr().Next().String()
	s.Fingerprint = labelFingerprint(map[string]string{"range": strings.NewReplacer(".", "-", "/", "-").Replace(s.IpCidrRange)})
	if s.StackType == "" {
		s.StackType = "IPV4_ONLY"
	}
	c.p.subnetworks[k] = &s
	n.Subnetworks = append(n.Subnetworks, s.SelfLink)
	return c.newOp("insert", s.SelfLink, s.Id)
}

func getSubnetwork(c *call) (any, error) {
	s, ok := c.p.subnetworks[key(c.where, c.names[0])]
	if !ok {
		return nil, notFound(c.thing("subnetworks", c.names[0]))
	}
	return s, nil
}

func listSubnetworks(c *call) (any, error) {
	items := map[string]*compute.Subnetwork{}
	for _, s := range c.p.subnetworks {
		if s.Region == c.scopeLink() {
			items[s.Name] = s
		}
	}
	out, next, err := page(c, items, nil)
	return &compute.SubnetworkList{Kind: "compute#subnetworkList", Items: out, NextPageToken: next, SelfLink: c.p.link("regions", c.where, "subnetworks")}, err
}

func deleteSubnetwork(c *call) (any, error) {
	s, ok := c.p.subnetworks[key(c.where, c.names[0])]
	if !ok {
		return nil, notFound(c.thing("subnetworks", c.names[0]))
	}
	for _, in := range c.p.instances {
		for _, ni := range in.NetworkInterfaces {
			if ni.Subnetwork == s.SelfLink {
				return nil, errorf(http.StatusBadRequest, "resourceInUseByAnotherResource",
					"The subnetwork resource '%s' is already being used by '%s'", c.thing("subnetworks", s.Name), trimBase(in.SelfLink))
			}
		}
	}
	delete(c.p.subnetworks, key(c.where, s.Name))
	if n, ok := c.p.networks[lastElem(s.Network)]; ok {
		for i, l := range n.Subnetworks {
			if l == s.SelfLink {
				n.Subnetworks = append(n.Subnetworks[:i:i], n.Subnetworks[i+1:]...)
				break
			}
		}
	}
	return c.newOp("delete", s.SelfLink, s.Id)
}

// checkFirewall completes and checks a firewall rule of a request.
func (c *call) checkFirewall(f *compute.Firewall) error {
	if err := checkName("resource.name", f.Name); err != nil {
		return err
	}
	n, err := c.networkRef("resource.network", f.Network)
	if err != nil {
		return err
	}
	f.Network = n.SelfLink
	if f.Direction == "" {
		f.Direction = "INGRESS"
	}
	if f.Priority == 0 {
		f.Priority = 1000
	}
	if len(f.Allowed) == 0 && len(f.Denied) == 0 {
		return invalid("Invalid value for field 'resource.allowed': ''. Must specify at least one rule.")
	}
	for _, a := range f.Allowed {
		if a.IPProtocol == "" {
			return invalid("Required field 'resource.allowed[].IPProtocol' not specified")
		}
	}
	for _, r := range f.SourceRanges {
		if _, err := netip.ParsePrefix(r); err != nil {
			if _, err := netip.ParseAddr(r); err != nil {
				return invalid("Invalid value for field 'resource.sourceRanges': '%s'. Invalid IPV4 or IPV6 CIDR.", r)
			}
		}
	}
	if f.Direction == "INGRESS" && len(f.SourceRanges) == 0 && len(f.SourceTags) == 0 && len(f.SourceServiceAccounts) == 0 {
		f.SourceRanges = []string{"0.0.0.0/0"}
	}
	return nil
}

func insertFirewall(c *call) (any, error) {
	var f compute.Firewall
	if err := c.decode(&f); err != nil {
		return nil, err
	}
	if _, ok := c.p.firewalls[f.Name]; ok {
		return nil, alreadyExists(c.thing("firewalls", f.Name))
	}
	if err := c.checkFirewall(&f); err != nil {
		return nil, err
	}
	f.Kind, f.Id, f.CreationTimestamp, f.SelfLink = "compute#firewall", c.s.newID(), now(), c.p.link("global", "firewalls", f.Name)
	c.p.firewalls[f.Name] = &f
	return c.newOp("insert", f.SelfLink, f.Id)
}

func getFirewall(c *call) (any, error) {
	f, ok := c.p.firewalls[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("firewalls", c.names[0]))
	}
	return f, nil
}

func listFirewalls(c *call) (any, error) {
	out, next, err := page(c, c.p.firewalls, nil)
	return &compute.FirewallList{Kind: "compute#firewallList", Items: out, NextPageToken: next, SelfLink: c.p.link("global", "firewalls")}, err
}

// patchFirewall merges the request's fields into the rule; updateFirewall replaces it.
func patchFirewall(c *call) (any, error) { return changeFirewall(c, true) }

func updateFirewall(c *call) (any, error) { return changeFirewall(c, false) }

func changeFirewall(c *call, patch bool) (any, error) {
	old, ok := c.p.firewalls[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("firewalls", c.names[0]))
	}
	if len(c.body) == 0 {
		return nil, invalid("Required field 'resource' not specified")
	}
	f := &compute.Firewall{}
	if patch {
		b := *old
		f = &b
		if err := patchJSON(f, c.body); err != nil {
			return nil, errorf(http.StatusBadRequest, "parseError", "Invalid JSON payload received. %v", err)
		}
	} else if err := c.decode(f); err != nil {
		return nil, err
	}
	if f.Name != old.Name {
		return nil, invalid("Invalid value for field 'resource.name': '%s'. The name of a firewall cannot change.", f.Name)
	}
	if patch && f.Network != old.Network {
		return nil, invalid("Invalid value for field 'resource.network': '%s'. The network of a firewall cannot change.", f.Network)
	}
	if err := c.checkFirewall(f); err != nil {
		return nil, err
	}
	f.Kind, f.Id, f.CreationTimestamp, f.SelfLink = old.Kind, old.Id, old.CreationTimestamp, old.SelfLink
	c.p.firewalls[f.Name] = f
	return c.newOp(map[bool]string{true: "patch", false: "update"}[patch], f.SelfLink, f.Id)
}

func deleteFirewall(c *call) (any, error) {
	f, ok := c.p.firewalls[c.names[0]]
	if !ok {
		return nil, notFound(c.thing("firewalls", c.names[0]))
	}
	delete(c.p.firewalls, f.Name)
	return c.newOp("delete", f.SelfLink, f.Id)
}
