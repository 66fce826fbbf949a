package localtasks

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

// FuzzZoneRoundTrip: whatever zone file kubeup can read, it writes back in a form that reads as the same
// records, to the bit: parse(write(parse(x))) == parse(x). The seeds are below and in
// testdata/fuzz/FuzzZoneRoundTrip (inputs the fuzzer found); `go test -fuzz=FuzzZoneRoundTrip` looks for more.
func FuzzZoneRoundTrip(f *testing.F) {
	for _, seed := range []string{
		"",
		"$ORIGIN example.com.\n$TTL 3600\n@ IN SOA ns1 admin 2030010101 3600 600 604800 60\n\tIN NS ns1\nns1 IN A 192.0.2.53\n@ IN MX 10 mail ; mail\nWWW 120 IN CNAME web.example.net.\n",
		"api 60 IN A 10.0.0.1\napi 60 IN AAAA 2001:db8::1\nt IN TXT \"a \\\"quoted\\\" \\\\ text; with \\250 bytes\" second\n",
		"x IN TXT \" MB \"\ny IN MB \" MB \"\n",
		"x IN SRV 0 5 5060 sip\nx IN CAA 0 issue \"ca.example.net; policy=ev\"\nx IN SSHFP 1 1 123456789abcdef67890123456789abcdef67890\n",
		"x IN TYPE65534 \\# 3 abcdef\nx IN HINFO \"a b\" c\nx IN NAPTR 100 10 \"S\" \"SIP+D2U\" \"!^.*$!sip:info@example.com!\" .\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, x []byte) {
		read, err := parseZone(x, "example.com", "x.zone")
		if err != nil {
			return // kubeup refuses it, and writes nothing
		}
		written := read.format()
		again, err := parseZone(written, "example.com", "written.zone")
		if err != nil {
			t.Fatalf("the zone as written does not parse: %v\nread:\n%q\nwritten:\n%s", err, x, written)
		}
		if diff := cmp.Diff(wireRecords(t, read), wireRecords(t, again)); diff != "" {
			t.Fatalf("the zone as written reads as other records (-read +written):\n%s\nread:\n%q\nwritten:\n%s", diff, x, written)
		}
		if diff := cmp.Diff(read.sets(), again.sets()); diff != "" {
			t.Fatalf("the zone as written has other record sets (-read +written):\n%s", diff)
		}
		if read.created != again.created {
			t.Fatalf("created by kubeup: %v as read, %v as written", read.created, again.created)
		}
	})
}

// wireRecords is every record of z, the SOA first, in RFC 3597's generic form (the data as it is on the wire),
// sorted: how a DNS server would serve them, whatever text they were read from.
func wireRecords(t *testing.T, z *zone) []string {
	var out []string
	for _, rr := range append([]dns.RR{z.soa}, z.rrs...) {
		var generic dns.RFC3597
		if err := generic.ToRFC3597(rr); err != nil {
			t.Fatalf("record %q has no wire form: %v", rr, err)
		}
		out = append(out, generic.String())
	}
	slices.Sort(out[1:])
	return out
}
