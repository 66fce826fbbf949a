package fakeaws

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Route53 speaks REST-XML under /2013-04-01/: hosted zones (create, get, list, list by name, delete), record
// sets (change in all-or-nothing batches, list with pagination) and changes (PENDING for a number of GetChange
// polls, then INSYNC). Hosted zone ids are "Z" and 13 upper-case hex digits; the API names them
// "/hostedzone/Z...", and takes either form. Record names are kept lower-case, absolute (a trailing dot), with a
// leading "*" written "\052" as Route53 does.

type route53State struct {
	zones map[string]*hostedZone // by id (Z...)
	// byReference maps a CreateHostedZone caller reference to the zone it made, deleted or not.
	byReference map[string]string
	changes     map[string]*r53Change // by id (C...)
	// pendingPolls is how many GetChange answers say PENDING before INSYNC (SetChangePendingPolls).
	pendingPolls int
}

type hostedZone struct {
	id, name, reference, comment string
	private                      bool
	nameServers                  []string
	records                      map[rrKey]*r53RecordSet
}

// rrKey identifies a record set in its zone.
type rrKey struct{ name, typ, setID string }

type r53Change struct {
	id        string
	submitted time.Time
	comment   string
	polls     int // GetChange answers left saying PENDING
}

func (s *Server) initRoute53() {
	s.r53 = route53State{zones: map[string]*hostedZone{}, byReference: map[string]string{}, changes: map[string]*r53Change{}}
}

// SetChangePendingPolls makes every change (ChangeResourceRecordSets, CreateHostedZone, DeleteHostedZone)
// answer PENDING to n GetChange calls before INSYNC; 0 (the default): the first GetChange answers INSYNC. The
// answer of the change itself always says PENDING, as Route53's does.
func (s *Server) SetChangePendingPolls(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r53.pendingPolls = max(n, 0)
}

// route53Operation names the Route53 operation of a request from its method and path (the name it is counted
// under).
func route53Operation(r *http.Request) string {
	parts := r53Path(r)
	var op string
	switch {
	case len(parts) == 1 && parts[0] == "hostedzone":
		op = map[string]string{http.MethodPost: "CreateHostedZone", http.MethodGet: "ListHostedZones"}[r.Method]
	case len(parts) == 1 && parts[0] == "hostedzonesbyname" && r.Method == http.MethodGet:
		op = "ListHostedZonesByName"
	case len(parts) == 2 && parts[0] == "hostedzone":
		op = map[string]string{http.MethodGet: "GetHostedZone", http.MethodDelete: "DeleteHostedZone"}[r.Method]
	case len(parts) == 3 && parts[0] == "hostedzone" && parts[2] == "rrset":
		op = map[string]string{http.MethodPost: "ChangeResourceRecordSets", http.MethodGet: "ListResourceRecordSets"}[r.Method]
	case len(parts) == 2 && parts[0] == "change" && r.Method == http.MethodGet:
		op = "GetChange"
	}
	if op == "" {
		return "Route53" + r.Method // no operation Route53 has: answered UnknownOperationException
	}
	return op
}

// r53Path splits a Route53 path after /2013-04-01/, without empty parts (the AWS CLI ends some with "/").
func r53Path(r *http.Request) []string {
	rest := strings.TrimPrefix(r.URL.Path, "/2013-04-01/")
	return slices.DeleteFunc(strings.Split(rest, "/"), func(p string) bool { return p == "" })
}

// serveRoute53 answers one Route53 request with s.mu held.
func (s *Server) serveRoute53(w http.ResponseWriter, r *http.Request) {
	parts := r53Path(r)
	var status int
	var answer any
	var err error
	switch op := route53Operation(r); op {
	case "CreateHostedZone":
		var loc string
		loc, answer, err = s.createHostedZone(r)
		w.Header().Set("Location", loc)
		status = http.StatusCreated
	case "GetHostedZone":
		answer, err = s.getHostedZone(parts[1])
	case "ListHostedZones":
		answer, err = s.listHostedZones(r)
	case "ListHostedZonesByName":
		answer, err = s.listHostedZonesByName(r)
	case "DeleteHostedZone":
		answer, err = s.deleteHostedZone(parts[1])
	case "ChangeResourceRecordSets":
		answer, err = s.changeResourceRecordSets(r, parts[1])
	case "ListResourceRecordSets":
		answer, err = s.listResourceRecordSets(r, parts[1])
	case "GetChange":
		answer, err = s.getChange(parts[1])
	default:
		err = &Error{Status: http.StatusNotFound, Code: "UnknownOperationException",
			Message: fmt.Sprintf("fakeaws: Route53 has no operation %s %s", r.Method, r.URL.Path)}
	}
	if err != nil {
		writeError(w, svcRoute53, err)
		return
	}
	if status == 0 {
		status = http.StatusOK
	}
	writeXML(w, status, answer)
}

// The documents. Each answer's XMLName carries the namespace.

type r53HostedZone struct {
	ID              string `xml:"Id"`
	Name            string `xml:"Name"`
	CallerReference string `xml:"CallerReference"`
	Config          struct {
		Comment     string `xml:"Comment,omitempty"`
		PrivateZone bool   `xml:"PrivateZone"`
	} `xml:"Config"`
	ResourceRecordSetCount int `xml:"ResourceRecordSetCount"`
}

type r53ChangeInfo struct {
	ID          string `xml:"Id"`
	Status      string `xml:"Status"`
	SubmittedAt string `xml:"SubmittedAt"`
	Comment     string `xml:"Comment,omitempty"`
}

type r53DelegationSet struct {
	NameServers []string `xml:"NameServers>NameServer"`
}

func r53Error(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (s *Server) createHostedZone(r *http.Request) (string, any, error) {
	var in struct {
		Name             string
		CallerReference  string
		HostedZoneConfig struct {
			Comment     string
			PrivateZone bool
		}
		VPC *struct {
			VPCRegion string
			VPCId     string
		}
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil {
		return "", nil, errorf("InvalidInput", "reading CreateHostedZoneRequest: %v", err)
	}
	if in.CallerReference == "" {
		return "", nil, errorf("InvalidInput", "CallerReference is required")
	}
	name, err := r53Name(in.Name)
	if err != nil {
		return "", nil, errorf("InvalidDomainName", "%v", err)
	}
	if id, ok := s.r53.byReference[in.CallerReference]; ok {
		return "", nil, r53Error(http.StatusConflict, "HostedZoneAlreadyExists",
			"A hosted zone has already been created with the specified caller reference (%s).", id)
	}
	s.nextID++
	z := &hostedZone{
		id: fmt.Sprintf("Z%013X", s.nextID), name: name, reference: in.CallerReference,
		comment: in.HostedZoneConfig.Comment, private: in.HostedZoneConfig.PrivateZone || in.VPC != nil,
		records: map[rrKey]*r53RecordSet{},
	}
	for i := range 4 {
		z.nameServers = append(z.nameServers, fmt.Sprintf("ns-%d.awsdns-%02d.fakeaws.invalid", int(s.nextID)*4+i, i))
	}
	ttl := func(n int64) *int64 { return &n }
	z.records[rrKey{name, "SOA", ""}] = &r53RecordSet{Name: name, Type: "SOA", TTL: ttl(900), ResourceRecords: []r53Value{{
		z.nameServers[0] + ". awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"}}}
	ns := &r53RecordSet{Name: name, Type: "NS", TTL: ttl(172800)}
	for _, n := range z.nameServers {
		ns.ResourceRecords = append(ns.ResourceRecords, r53Value{n + "."})
	}
	z.records[rrKey{name, "NS", ""}] = ns
	s.r53.zones[z.id] = z
	s.r53.byReference[in.CallerReference] = z.id
	type vpc struct {
		VPCRegion string `xml:"VPCRegion"`
		VPCId     string `xml:"VPCId"`
	}
	answer := struct {
		XMLName       xml.Name          `xml:"https://route53.amazonaws.com/doc/2013-04-01/ CreateHostedZoneResponse"`
		HostedZone    r53HostedZone     `xml:"HostedZone"`
		ChangeInfo    r53ChangeInfo     `xml:"ChangeInfo"`
		DelegationSet *r53DelegationSet `xml:"DelegationSet,omitempty"`
		VPC           *vpc              `xml:"VPC,omitempty"`
	}{HostedZone: z.document(), ChangeInfo: s.newChange(in.HostedZoneConfig.Comment)}
	if in.VPC != nil {
		answer.VPC = &vpc{in.VPC.VPCRegion, in.VPC.VPCId}
	} else {
		answer.DelegationSet = &r53DelegationSet{z.nameServers}
	}
	return "https://route53.amazonaws.com/2013-04-01/hostedzone/" + z.id, answer, nil
}

func (z *hostedZone) document() r53HostedZone {
	d := r53HostedZone{ID: "/hostedzone/" + z.id, Name: z.name, CallerReference: z.reference, ResourceRecordSetCount: len(z.records)}
	d.Config.Comment, d.Config.PrivateZone = z.comment, z.private
	return d
}

// zone finds a hosted zone by its id, with or without "/hostedzone/".
func (s *Server) zone(id string) (*hostedZone, error) {
	id = strings.TrimPrefix(id, "/hostedzone/")
	if z, ok := s.r53.zones[id]; ok {
		return z, nil
	}
	return nil, r53Error(http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: %s", id)
}

// newChange records a change, PENDING for the configured number of GetChange polls. Call it with s.mu held.
func (s *Server) newChange(comment string) r53ChangeInfo {
	s.nextID++
	c := &r53Change{id: fmt.Sprintf("C%013X", s.nextID), submitted: time.Now().UTC(), comment: comment, polls: s.r53.pendingPolls}
	s.r53.changes[c.id] = c
	return r53ChangeInfo{ID: "/change/" + c.id, Status: "PENDING", SubmittedAt: c.submitted.Format("2006-01-02T15:04:05.000Z"), Comment: comment}
}

func (s *Server) getChange(id string) (any, error) {
	id = strings.TrimPrefix(id, "/change/")
	c, ok := s.r53.changes[id]
	if !ok {
		return nil, r53Error(http.StatusNotFound, "NoSuchChange", "Could not find resource with ID: %s", id)
	}
	status := "INSYNC"
	if c.polls > 0 {
		c.polls--
		status = "PENDING"
	}
	return struct {
		XMLName    xml.Name      `xml:"https://route53.amazonaws.com/doc/2013-04-01/ GetChangeResponse"`
		ChangeInfo r53ChangeInfo `xml:"ChangeInfo"`
	}{ChangeInfo: r53ChangeInfo{ID: "/change/" + c.id, Status: status, SubmittedAt: c.submitted.Format("2006-01-02T15:04:05.000Z"), Comment: c.comment}}, nil
}

func (s *Server) getHostedZone(id string) (any, error) {
	z, err := s.zone(id)
	if err != nil {
		return nil, err
	}
	answer := struct {
		XMLName       xml.Name          `xml:"https://route53.amazonaws.com/doc/2013-04-01/ GetHostedZoneResponse"`
		HostedZone    r53HostedZone     `xml:"HostedZone"`
		DelegationSet *r53DelegationSet `xml:"DelegationSet,omitempty"`
	}{HostedZone: z.document()}
	if !z.private {
		answer.DelegationSet = &r53DelegationSet{z.nameServers}
	}
	return answer, nil
}

// sortedZones returns the hosted zones in the order of ListHostedZonesByName: by name (labels reversed), then id.
func (s *Server) sortedZones() []*hostedZone {
	var zones []*hostedZone
	for _, z := range s.r53.zones {
		zones = append(zones, z)
	}
	slices.SortFunc(zones, func(a, b *hostedZone) int {
		if c := strings.Compare(reverseLabels(a.name), reverseLabels(b.name)); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return zones
}

// maxItems reads the maxitems query parameter: def when absent, at most limit.
func maxItems(r *http.Request, def, limit int) (int, error) {
	v := r.URL.Query().Get("maxitems")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errorf("InvalidInput", "1 validation error detected: Value '%s' at 'maxItems' failed to satisfy constraint: Member must be a positive integer", v)
	}
	return min(n, limit), nil
}

type r53Zones struct {
	Zones []r53HostedZone `xml:"HostedZone"`
}

func (s *Server) listHostedZones(r *http.Request) (any, error) {
	limit, err := maxItems(r, 100, 100)
	if err != nil {
		return nil, err
	}
	zones := s.sortedZones()
	marker := strings.TrimPrefix(r.URL.Query().Get("marker"), "/hostedzone/")
	if marker != "" {
		i := slices.IndexFunc(zones, func(z *hostedZone) bool { return z.id == marker })
		if i < 0 {
			return nil, errorf("InvalidInput", "marker %s is not a hosted zone", marker)
		}
		zones = zones[i:]
	}
	answer := struct {
		XMLName     xml.Name `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListHostedZonesResponse"`
		HostedZones r53Zones `xml:"HostedZones"`
		Marker      string   `xml:"Marker"`
		IsTruncated bool     `xml:"IsTruncated"`
		NextMarker  string   `xml:"NextMarker,omitempty"`
		MaxItems    int      `xml:"MaxItems"`
	}{Marker: marker, MaxItems: limit}
	if len(zones) > limit {
		answer.IsTruncated, answer.NextMarker = true, zones[limit].id
		zones = zones[:limit]
	}
	for _, z := range zones {
		answer.HostedZones.Zones = append(answer.HostedZones.Zones, z.document())
	}
	return answer, nil
}

func (s *Server) listHostedZonesByName(r *http.Request) (any, error) {
	limit, err := maxItems(r, 100, 100)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	dnsName, zoneID := q.Get("dnsname"), strings.TrimPrefix(q.Get("hostedzoneid"), "/hostedzone/")
	if zoneID != "" && dnsName == "" {
		return nil, errorf("InvalidInput", "HostedZoneId is only allowed with DNSName")
	}
	zones := s.sortedZones()
	answer := struct {
		XMLName          xml.Name `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListHostedZonesByNameResponse"`
		HostedZones      r53Zones `xml:"HostedZones"`
		DNSName          string   `xml:"DNSName,omitempty"`
		HostedZoneID     string   `xml:"HostedZoneId,omitempty"`
		IsTruncated      bool     `xml:"IsTruncated"`
		NextDNSName      string   `xml:"NextDNSName,omitempty"`
		NextHostedZoneID string   `xml:"NextHostedZoneId,omitempty"`
		MaxItems         int      `xml:"MaxItems"`
	}{DNSName: dnsName, HostedZoneID: zoneID, MaxItems: limit}
	if dnsName != "" {
		name, err := r53Name(dnsName)
		if err != nil {
			return nil, errorf("InvalidDomainName", "%v", err)
		}
		answer.DNSName = name
		start := reverseLabels(name)
		i := slices.IndexFunc(zones, func(z *hostedZone) bool {
			c := strings.Compare(reverseLabels(z.name), start)
			return c > 0 || c == 0 && z.id >= zoneID
		})
		if i < 0 {
			i = len(zones)
		}
		zones = zones[i:]
	}
	if len(zones) > limit {
		answer.IsTruncated, answer.NextDNSName, answer.NextHostedZoneID = true, zones[limit].name, zones[limit].id
		zones = zones[:limit]
	}
	for _, z := range zones {
		answer.HostedZones.Zones = append(answer.HostedZones.Zones, z.document())
	}
	return answer, nil
}

func (s *Server) deleteHostedZone(id string) (any, error) {
	z, err := s.zone(id)
	if err != nil {
		return nil, err
	}
	for k := range z.records {
		if k.name != z.name || k.typ != "SOA" && k.typ != "NS" {
			return nil, r53Error(http.StatusBadRequest, "HostedZoneNotEmpty",
				"The specified hosted zone contains non-required resource record sets and so cannot be deleted.")
		}
	}
	delete(s.r53.zones, z.id) // its caller reference stays used, as in Route53
	return struct {
		XMLName    xml.Name      `xml:"https://route53.amazonaws.com/doc/2013-04-01/ DeleteHostedZoneResponse"`
		ChangeInfo r53ChangeInfo `xml:"ChangeInfo"`
	}{ChangeInfo: s.newChange("")}, nil
}

// r53Name normalises a domain name as Route53 keeps it: lower-case, absolute, a leading "*" as "\052".
func r53Name(name string) (string, error) {
	n := strings.ToLower(strings.TrimSuffix(name, "."))
	if n == "" {
		return "", fmt.Errorf("%q is not a valid domain name", name)
	}
	if rest, ok := strings.CutPrefix(n, "*"); ok {
		n = `\052` + rest
	}
	if len(n) > 254 {
		return "", fmt.Errorf("%q is longer than 255 characters", name)
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("%q is not a valid domain name: empty label or label longer than 63 characters", name)
		}
	}
	return n + ".", nil
}

// reverseLabels is the key Route53 sorts names by: "www.example.com." is "com.example.www".
func reverseLabels(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}
