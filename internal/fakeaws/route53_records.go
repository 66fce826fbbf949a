package fakeaws

import (
	"encoding/xml"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
)

// Route53's record sets: ChangeResourceRecordSets (all-or-nothing batches of CREATE, UPSERT and DELETE) and
// ListResourceRecordSets (sorted by name with its labels reversed, then type; paginated).

// r53Types are the record types the fake keeps.
var r53Types = []string{"A", "AAAA", "CAA", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT"}

// r53RecordSet is a ResourceRecordSet, as requested and as answered; a stored one has its name normalised.
type r53RecordSet struct {
	Name             string     `xml:"Name"`
	Type             string     `xml:"Type"`
	SetIdentifier    string     `xml:"SetIdentifier,omitempty"`
	Weight           *int64     `xml:"Weight,omitempty"`
	Region           string     `xml:"Region,omitempty"`
	Failover         string     `xml:"Failover,omitempty"`
	MultiValueAnswer *bool      `xml:"MultiValueAnswer,omitempty"`
	TTL              *int64     `xml:"TTL,omitempty"`
	ResourceRecords  []r53Value `xml:"ResourceRecords>ResourceRecord"`
	AliasTarget      *r53Alias  `xml:"AliasTarget,omitempty"`
	HealthCheckID    string     `xml:"HealthCheckId,omitempty"`
}

type r53Value struct {
	Value string `xml:"Value"`
}

type r53Alias struct {
	HostedZoneID         string `xml:"HostedZoneId"`
	DNSName              string `xml:"DNSName"`
	EvaluateTargetHealth bool   `xml:"EvaluateTargetHealth"`
}

func (rs *r53RecordSet) key() rrKey { return rrKey{rs.Name, rs.Type, rs.SetIdentifier} }

// describe names a record set in Route53's messages: [name='a.example.com.', type='A'].
func (rs *r53RecordSet) describe() string {
	d := fmt.Sprintf("[name='%s', type='%s'", rs.Name, rs.Type)
	if rs.SetIdentifier != "" {
		d += fmt.Sprintf(", set-identifier='%s'", rs.SetIdentifier)
	}
	return d + "]"
}

// sameAs reports whether a DELETE's record set matches the stored one exactly (values in any order).
func (rs *r53RecordSet) sameAs(o *r53RecordSet) bool {
	values := func(r *r53RecordSet) []string {
		var v []string
		for _, rr := range r.ResourceRecords {
			v = append(v, rr.Value)
		}
		slices.Sort(v)
		return v
	}
	eq := func(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	return eq(rs.TTL, o.TTL) && eq(rs.Weight, o.Weight) && slices.Equal(values(rs), values(o)) &&
		(rs.AliasTarget == nil) == (o.AliasTarget == nil) && (rs.AliasTarget == nil || *rs.AliasTarget == *o.AliasTarget)
}

func (s *Server) changeResourceRecordSets(r *http.Request, zoneID string) (any, error) {
	z, err := s.zone(zoneID)
	if err != nil {
		return nil, err
	}
	var in struct {
		ChangeBatch struct {
			Comment string `xml:"Comment"`
			Changes []struct {
				Action            string       `xml:"Action"`
				ResourceRecordSet r53RecordSet `xml:"ResourceRecordSet"`
			} `xml:"Changes>Change"`
		} `xml:"ChangeBatch"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil {
		return nil, errorf("InvalidInput", "reading ChangeResourceRecordSetsRequest: %v", err)
	}
	if len(in.ChangeBatch.Changes) == 0 {
		return nil, errorf("InvalidInput", "1 validation error detected: Value '[]' at 'changeBatch.changes' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	// Apply the batch to a copy: the zone changes only when every change is valid.
	records := maps.Clone(z.records)
	var reasons []string
	for _, c := range in.ChangeBatch.Changes {
		rs := c.ResourceRecordSet
		if err := checkRecordSet(&rs, c.Action); err != nil {
			return nil, err
		}
		if !strings.HasSuffix("."+rs.Name, "."+z.name) {
			reasons = append(reasons, fmt.Sprintf("RRSet with DNS name %s is not permitted in zone %s", rs.Name, z.name))
			continue
		}
		reasons = append(reasons, checkValues(&rs)...)
		cur, exists := records[rs.key()]
		switch c.Action {
		case "CREATE":
			if exists {
				reasons = append(reasons, fmt.Sprintf("Tried to create resource record set %s but it already exists", rs.describe()))
				continue
			}
			records[rs.key()] = &rs
		case "UPSERT":
			records[rs.key()] = &rs
		case "DELETE":
			switch {
			case !exists:
				reasons = append(reasons, fmt.Sprintf("Tried to delete resource record set %s but it was not found", rs.describe()))
			case !cur.sameAs(&rs):
				reasons = append(reasons, fmt.Sprintf("Tried to delete resource record set %s but the values provided do not match the current values", rs.describe()))
			case rs.Name == z.name && rs.Type == "SOA":
				reasons = append(reasons, "A HostedZone must contain exactly one SOA record.")
			case rs.Name == z.name && rs.Type == "NS":
				reasons = append(reasons, "A HostedZone must contain at least one NS record for the zone itself.")
			default:
				delete(records, rs.key())
			}
		}
	}
	reasons = append(reasons, cnameConflicts(records, z.name)...)
	if len(reasons) > 0 {
		return nil, errorf("InvalidChangeBatch", "[%s]", strings.Join(reasons, ", "))
	}
	z.records = records
	return struct {
		XMLName    xml.Name      `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ChangeResourceRecordSetsResponse"`
		ChangeInfo r53ChangeInfo `xml:"ChangeInfo"`
	}{ChangeInfo: s.newChange(in.ChangeBatch.Comment)}, nil
}

// checkRecordSet checks the shape of one change and normalises its record set's name: an error here fails the
// request with InvalidInput, as Route53's validation does.
func checkRecordSet(rs *r53RecordSet, action string) error {
	if !slices.Contains([]string{"CREATE", "UPSERT", "DELETE"}, action) {
		return errorf("InvalidInput", "Invalid XML ; Action %q is not one of CREATE, UPSERT, DELETE", action)
	}
	name, err := r53Name(rs.Name)
	if err != nil {
		return errorf("InvalidInput", "Invalid request: %v", err)
	}
	rs.Name = name
	if !slices.Contains(r53Types, rs.Type) {
		return errorf("InvalidInput", "Invalid XML ; Type %q is not one of %s", rs.Type, strings.Join(r53Types, ", "))
	}
	if (rs.AliasTarget != nil) == (rs.TTL != nil && len(rs.ResourceRecords) > 0) {
		return errorf("InvalidInput", "Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords]], but found %s in Change with [Action=%s, Name=%s, Type=%s, SetIdentifier=%s]",
			map[bool]string{true: "more than one", false: "none"}[rs.AliasTarget != nil], action, rs.Name, rs.Type, rs.SetIdentifier)
	}
	if rs.AliasTarget != nil {
		if n, err := r53Name(rs.AliasTarget.DNSName); err == nil {
			rs.AliasTarget.DNSName = n
		}
	}
	return nil
}

// checkValues checks the values of a record set by its type: Route53's "Invalid Resource Record" reasons.
func checkValues(rs *r53RecordSet) []string {
	var reasons []string
	bad := func(problem, v string) {
		reasons = append(reasons, fmt.Sprintf("Invalid Resource Record: 'FATAL problem: %s encountered with '%s''", problem, v))
	}
	for _, rr := range rs.ResourceRecords {
		v := rr.Value
		switch rs.Type {
		case "A":
			if ip := net.ParseIP(v); ip == nil || ip.To4() == nil || strings.Contains(v, ":") {
				bad("ARRDATAIllegalIPv4Address (Value is not a valid IPv4 address)", v)
			}
		case "AAAA":
			if ip := net.ParseIP(v); ip == nil || !strings.Contains(v, ":") {
				bad("AAAARRDATAIllegalIPv6Address (Value is not a valid IPv6 address)", v)
			}
		case "TXT":
			if len(v) < 2 || !strings.HasPrefix(v, `"`) || !strings.HasSuffix(v, `"`) {
				bad("InvalidCharacterString (Value should be enclosed in quotation marks)", v)
			}
		}
	}
	if rs.Type == "CNAME" && len(rs.ResourceRecords) > 1 {
		reasons = append(reasons, fmt.Sprintf("RRSet of type CNAME with DNS name %s has more than one value", rs.Name))
	}
	return reasons
}

// cnameConflicts are the reasons a zone's records cannot be: a CNAME at the apex, or beside another type.
func cnameConflicts(records map[rrKey]*r53RecordSet, zone string) []string {
	types := map[string][]string{}
	for k := range records {
		types[k.name] = append(types[k.name], k.typ)
	}
	var reasons []string
	for _, name := range slices.Sorted(maps.Keys(types)) {
		ts := types[name]
		if !slices.Contains(ts, "CNAME") {
			continue
		}
		if name == zone {
			reasons = append(reasons, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted at apex in zone %s", name, zone))
			continue
		}
		for _, t := range slices.Sorted(slices.Values(ts)) {
			if t != "CNAME" {
				reasons = append(reasons, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted because a conflicting RRSet of type %s with the same DNS name already exists in zone %s", name, t, zone))
				break
			}
		}
	}
	return reasons
}

// compareRecordSets is Route53's listing order: name with its labels reversed, type, set identifier.
func compareRecordSets(a, b rrKey) int {
	if c := strings.Compare(reverseLabels(a.name), reverseLabels(b.name)); c != 0 {
		return c
	}
	if c := strings.Compare(a.typ, b.typ); c != 0 {
		return c
	}
	return strings.Compare(a.setID, b.setID)
}

func (s *Server) listResourceRecordSets(r *http.Request, zoneID string) (any, error) {
	z, err := s.zone(zoneID)
	if err != nil {
		return nil, err
	}
	limit, err := maxItems(r, 300, 300)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	startName, startType, startID := q.Get("name"), q.Get("type"), q.Get("identifier")
	if startType != "" && startName == "" {
		return nil, errorf("InvalidInput", "The input is not valid: StartRecordType requires StartRecordName")
	}
	if startType != "" && !slices.Contains(r53Types, startType) {
		return nil, errorf("InvalidInput", "Invalid type %q", startType)
	}
	keys := slices.SortedFunc(maps.Keys(z.records), compareRecordSets)
	if startName != "" {
		name, err := r53Name(startName)
		if err != nil {
			return nil, errorf("InvalidInput", "%v", err)
		}
		start := rrKey{name, startType, startID}
		i := slices.IndexFunc(keys, func(k rrKey) bool {
			if startType == "" {
				k.typ, k.setID = "", ""
			}
			return compareRecordSets(k, start) >= 0
		})
		if i < 0 {
			i = len(keys)
		}
		keys = keys[i:]
	}
	type recordSets struct {
		Items []*r53RecordSet `xml:"ResourceRecordSet"`
	}
	answer := struct {
		XMLName              xml.Name   `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListResourceRecordSetsResponse"`
		ResourceRecordSets   recordSets `xml:"ResourceRecordSets"`
		IsTruncated          bool       `xml:"IsTruncated"`
		NextRecordName       string     `xml:"NextRecordName,omitempty"`
		NextRecordType       string     `xml:"NextRecordType,omitempty"`
		NextRecordIdentifier string     `xml:"NextRecordIdentifier,omitempty"`
		MaxItems             int        `xml:"MaxItems"`
	}{MaxItems: limit}
	if len(keys) > limit {
		next := keys[limit]
		answer.IsTruncated, answer.NextRecordName, answer.NextRecordType, answer.NextRecordIdentifier = true, next.name, next.typ, next.setID
		keys = keys[:limit]
	}
	for _, k := range keys {
		answer.ResourceRecordSets.Items = append(answer.ResourceRecordSets.Items, z.records[k])
	}
	return answer, nil
}
