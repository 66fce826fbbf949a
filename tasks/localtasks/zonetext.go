package localtasks

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// createdMarker starts the first line of a zone file kubeup created. Only such a file is removed when its last
// record is deleted; a zone file someone else made stays.
const createdMarker = "; Created by kubeup."

const managedHeader = `; kubeup manages this zone file and rewrites it on every change: records added by hand are kept,
; comments and formatting are not. A file kubeup created is removed when only its SOA and NS records are left.
`

// The SOA and NS records of a zone kubeup creates. The name server is "localhost.", outside the zone, so that a
// DNS server (BIND, Knot, ...) loads the zone without glue records.
const (
	nameServer = "localhost."
	apexTTL    = 3600
	defaultTTL = 300 // the $TTL line: records kubeup writes carry their own
)

// zone is a parsed zone file.
type zone struct {
	origin  string // the zone's canonical name
	created bool   // the file starts with createdMarker
	soa     *dns.SOA
	rrs     []dns.RR // every record but the SOA, as parsed
}

// parseZone parses the master file b of zone origin (canonical name) with miekg/dns' parser: what a DNS server
// reads is what kubeup reads. $INCLUDE is refused, and so is a record a DNS server could not serve (see
// fromWire); every record is kept as read back from its wire form, so that format writes it in a form that
// reads the same.
func parseZone(b []byte, origin, path string) (*zone, error) {
	z := &zone{origin: origin, created: bytes.HasPrefix(b, []byte(createdMarker))}
	zp := dns.NewZoneParser(bytes.NewReader(b), origin+".", path)
	for read, ok := zp.Next(); ok; read, ok = zp.Next() {
		rr, err := fromWire(read)
		if err != nil {
			return nil, fmt.Errorf("%s: record %q is not one a DNS server can serve (%w): fix it or remove it", path, read, err)
		}
		soa, isSOA := rr.(*dns.SOA)
		if !isSOA {
			z.rrs = append(z.rrs, rr)
			continue
		}
		if z.soa != nil || nameOf(rr) != origin {
			return nil, fmt.Errorf("%s: an SOA record for %s is out of place: a zone file has one, for its origin %s",
				path, rr.Header().Name, origin)
		}
		z.soa = soa
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("parsing zone file %w: fix the file or remove it", err) // err names the file and line
	}
	if z.soa == nil { // a file made by hand: give it the SOA a DNS server needs
		z.soa = newZone(origin).soa
	}
	return z, nil
}

// newZone returns the zone kubeup creates: an SOA and an NS record.
func newZone(origin string) *zone {
	fqdn := origin + "."
	return &zone{
		origin:  origin,
		created: true,
		soa: &dns.SOA{
			Hdr: dns.RR_Header{Name: fqdn, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: apexTTL},
			Ns:  nameServer, Mbox: "hostmaster." + fqdn,
			Refresh: 3600, Retry: 600, Expire: 604800, Minttl: 60,
		},
		rrs: []dns.RR{&dns.NS{
			Hdr: dns.RR_Header{Name: fqdn, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: apexTTL},
			Ns:  nameServer,
		}},
	}
}

// nameOf returns the canonical owner name of rr.
func nameOf(rr dns.RR) string { return dnstasks.CanonicalName(rr.Header().Name) }

// typeOf returns the type of rr as a string ("A").
func typeOf(rr dns.RR) string { return dns.TypeToString[rr.Header().Rrtype] }

// onlyApex reports whether the zone holds nothing but its SOA and the NS records of its apex.
func (z *zone) onlyApex() bool {
	for _, rr := range z.rrs {
		if _, ok := rr.(*dns.NS); !ok || nameOf(rr) != z.origin {
			return false
		}
	}
	return true
}

// sets returns the zone's record sets of the types dnstasks manages, sorted by name then type. A set's TTL is
// the smallest of its records'; values are canonical, sorted and unique.
func (z *zone) sets() []dnstasks.RecordSet {
	type key struct{ name, rrtype string }
	byKey := map[key]*dnstasks.RecordSet{}
	var keys []key
	for _, rr := range z.rrs {
		v, ok := valueOf(rr)
		name := nameOf(rr)
		if !ok || !dnstasks.InZone(name, z.origin) {
			continue
		}
		k := key{name, typeOf(rr)}
		rs := byKey[k]
		if rs == nil {
			rs = &dnstasks.RecordSet{Name: k.name, Type: k.rrtype, TTL: int(rr.Header().Ttl)}
			byKey[k] = rs
			keys = append(keys, k)
		}
		rs.TTL = min(rs.TTL, int(rr.Header().Ttl))
		if !slices.Contains(rs.Values, v) {
			rs.Values = append(rs.Values, v)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.rrtype, b.rrtype)
	})
	out := make([]dnstasks.RecordSet, 0, len(keys))
	for _, k := range keys {
		rs := byKey[k]
		slices.Sort(rs.Values)
		out = append(out, *rs)
	}
	return out
}

// valueOf returns the canonical value of a record of a type dnstasks manages.
func valueOf(rr dns.RR) (string, bool) {
	switch rr := rr.(type) {
	case *dns.A:
		a, ok := netip.AddrFromSlice(rr.A)
		return a.Unmap().String(), ok && a.Unmap().Is4()
	case *dns.AAAA:
		a, ok := netip.AddrFromSlice(rr.AAAA)
		return a.String(), ok && a.Is6()
	case *dns.CNAME:
		return dnstasks.CanonicalName(rr.Target), true
	case *dns.TXT:
		var b strings.Builder
		for _, s := range rr.Txt {
			b.WriteString(unescapeTXT(s))
		}
		return b.String(), true
	}
	return "", false
}

// remove drops the records of name and type; it reports whether there were any.
func (z *zone) remove(name, rrtype string) bool {
	n := len(z.rrs)
	z.rrs = slices.DeleteFunc(z.rrs, func(rr dns.RR) bool { return nameOf(rr) == name && typeOf(rr) == rrtype })
	return len(z.rrs) != n
}

// hasOther returns a type of record, other than rrtype, that name has; the apex has its SOA.
func (z *zone) hasOther(name, rrtype string) (string, bool) {
	if name == z.origin {
		return "SOA", true
	}
	for _, rr := range z.rrs {
		if nameOf(rr) == name && typeOf(rr) != rrtype {
			return typeOf(rr), true
		}
	}
	return "", false
}

// add appends the records of a record set that Validate accepts.
func (z *zone) add(rs dnstasks.RecordSet) {
	hdr := dns.RR_Header{Name: rs.Name + ".", Class: dns.ClassINET, Ttl: uint32(rs.TTL)}
	for _, v := range rs.Values {
		var rr dns.RR
		switch rs.Type {
		case dnstasks.TypeTXT:
			hdr.Rrtype = dns.TypeTXT
			rr = &dns.TXT{Hdr: hdr, Txt: chunkTXT(v)}
		case dnstasks.TypeCNAME:
			hdr.Rrtype = dns.TypeCNAME
			rr = &dns.CNAME{Hdr: hdr, Target: v + "."}
		case dnstasks.TypeA:
			hdr.Rrtype = dns.TypeA
			rr = &dns.A{Hdr: hdr, A: netip.MustParseAddr(v).AsSlice()}
		case dnstasks.TypeAAAA:
			hdr.Rrtype = dns.TypeAAAA
			rr = &dns.AAAA{Hdr: hdr, AAAA: netip.MustParseAddr(v).AsSlice()}
		}
		z.rrs = append(z.rrs, rr)
	}
}

// bumpSerial increases the SOA serial: to the current Unix time, or by one when that is not larger.
func (z *zone) bumpSerial(now time.Time) {
	z.soa.Serial = max(z.soa.Serial+1, uint32(now.Unix()))
}

// format writes the zone as a master file: the header, $ORIGIN and $TTL, the SOA, the NS records of the apex,
// then every other record sorted by name, type and data.
func (z *zone) format() []byte {
	var b bytes.Buffer
	if z.created {
		b.WriteString(createdMarker + "\n")
	}
	b.WriteString(managedHeader)
	fmt.Fprintf(&b, "$ORIGIN %s.\n$TTL %d\n", z.origin, defaultTTL)
	b.WriteString(presentation(z.soa) + "\n")
	rank := func(rr dns.RR) int {
		if _, ok := rr.(*dns.NS); ok && nameOf(rr) == z.origin {
			return 0
		}
		return 1
	}
	rrs := slices.Clone(z.rrs)
	slices.SortStableFunc(rrs, func(a, b dns.RR) int {
		if c := rank(a) - rank(b); c != 0 {
			return c
		}
		if c := strings.Compare(nameOf(a), nameOf(b)); c != 0 {
			return c
		}
		if c := strings.Compare(typeOf(a), typeOf(b)); c != 0 {
			return c
		}
		return strings.Compare(a.String(), b.String())
	})
	for _, rr := range rrs {
		b.WriteString(presentation(rr) + "\n")
	}
	return b.Bytes()
}

// fromWire returns rr as a DNS server would serve it: packed into its wire form and read back, so that every
// name and every string of it is in one canonical text form, whatever form the file wrote it in ("'" or "\'").
// It refuses a record a zone cannot hold: one without an owner name (an indented first record), one of a known
// type with no data (miekg/dns reads "x IN A" as it would in a dynamic update), one that does not fit a DNS
// message, or whose wire form does not read back as itself, as text (RFC 3597's generic form) or as data.
func fromWire(rr dns.RR) (dns.RR, error) {
	if name := rr.Header().Name; name == "" || !dns.IsFqdn(name) {
		return nil, errors.New("it has no owner name")
	}
	wire := make([]byte, dns.Len(rr)+512)
	n, err := dns.PackRR(rr, wire, 0, nil, false)
	if errors.Is(err, dns.ErrBuf) {
		wire = make([]byte, 1<<17)
		n, err = dns.PackRR(rr, wire, 0, nil, false)
	}
	if err != nil {
		return nil, fmt.Errorf("it does not fit a DNS message: %w", err)
	}
	wire = wire[:n]
	back, _, err := dns.UnpackRR(wire, 0)
	if err != nil {
		return nil, fmt.Errorf("its wire form does not read back: %w", err)
	}
	switch back.(type) {
	case *dns.RFC3597, *dns.APL: // the data of an unknown type, or an address prefix list, may be empty
	default:
		if back.Header().Rdlength == 0 {
			return nil, errors.New("it has no data")
		}
	}
	again := make([]byte, len(wire)+512)
	if n, err := dns.PackRR(back, again, 0, nil, false); err != nil || !bytes.Equal(again[:n], wire) {
		return nil, errors.New("its wire form does not read back as itself")
	}
	generic, err := genericForm(back)
	if err == nil {
		var text dns.RR
		if text, err = dns.NewRR(generic); err == nil && text != nil {
			var g string
			if g, err = genericForm(text); err == nil && g != generic {
				err = errors.New(g)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("its generic form %s does not read back as itself: %w", generic, err)
	}
	return back, nil
}

// presentation returns rr as a line of a zone file: its text form when that reads back as the same record (to
// the bit, on the wire), and otherwise RFC 3597's generic form ("TYPE16 \# 4 03612062"), which fromWire made sure
// does. miekg/dns prints some records it reads in a form it cannot read back (FuzzZoneRoundTrip finds them):
// kubeup keeps what it read, and writes it so that it reads the same.
func presentation(rr dns.RR) string {
	text := rr.String()
	generic, err := genericForm(rr)
	if err != nil {
		return text // fromWire refuses such a record, and kubeup makes none: not reached
	}
	if back, err := dns.NewRR(text); err == nil && back != nil {
		if again, err := genericForm(back); err == nil && again == generic {
			return text
		}
	}
	return generic
}

// genericForm returns rr in RFC 3597's generic form: its owner, TTL, class, type and data as on the wire.
func genericForm(rr dns.RR) (string, error) {
	var g dns.RFC3597
	if err := g.ToRFC3597(rr); err != nil {
		return "", err
	}
	return g.String(), nil
}

// chunkTXT splits a TXT value into character-strings of at most 255 bytes, in the escaped form miekg/dns keeps
// them in.
func chunkTXT(v string) []string {
	chunks := []string{}
	for {
		n := min(len(v), 255)
		chunks = append(chunks, escapeTXT(v[:n]))
		v = v[n:]
		if v == "" {
			return chunks
		}
	}
}

// escapeTXT writes a character-string in presentation form: '"' and '\' escaped, bytes outside printable ASCII
// as \DDD.
func escapeTXT(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeTXT reads a character-string in presentation form back: \DDD is a byte, \X is X.
func unescapeTXT(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		if i+4 <= len(s) && isDigits(s[i+1:i+4]) {
			if n, err := strconv.Atoi(s[i+1 : i+4]); err == nil && n < 256 {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		i++
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDigits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}
