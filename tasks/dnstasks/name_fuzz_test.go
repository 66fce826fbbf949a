package dnstasks

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// FuzzDNSName: for any string, CanonicalName and ValidateName do not panic, and a name ValidateName accepts
// (after CanonicalName, as every provider and task does) is one DNS carries as it is: canonical already (lower
// case, no final dot: CanonicalName changes nothing), at most 253 bytes of labels of 1 to 63 letters, digits, '-'
// and '_' (a '*' first label aside), which the DNS wire format packs and unpacks to the same name (miekg/dns, an
// independent implementation, as referee); it is in its own zone and in no zone below it; it is a valid CNAME
// target, written the same. A name refused is refused with a message, and CanonicalValue of a CNAME refuses it
// too. The seeds are below and in testdata/fuzz/FuzzDNSName (inputs the fuzzer found).
func FuzzDNSName(f *testing.F) {
	for _, seed := range []string{
		"", ".", "..", "api.demo.example.com", "API.Demo.Example.COM.", "*.demo.example.com", "a.*.example.com",
		"_acme-challenge.demo.example.com", "-a.example.com", "a-.example.com", "a..example.com", "a.example.com..",
		strings.Repeat("a", 63) + ".example.com", strings.Repeat("a", 64) + ".example.com",
		strings.Repeat("abcdefghi.", 25) + "com", "\u212a.example.com", "İ.example.com", "a b.example.com",
		"a\\.b.example.com", "a.example.com\x00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		c := CanonicalName(name)
		err := ValidateName(c)
		_, cnameErr := CanonicalValue(TypeCNAME, name)
		if (err == nil) != (cnameErr == nil) {
			t.Fatalf("ValidateName(%q): %v, but CanonicalValue(CNAME, %q): %v", c, err, name, cnameErr)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ValidateName(%q) refuses it without a message", c)
			}
			return
		}
		if again := CanonicalName(c); again != c {
			t.Fatalf("CanonicalName(%q) = %q: a valid name is not canonical", c, again)
		}
		if len(c) > 253 {
			t.Fatalf("%q of %d bytes accepted", c, len(c))
		}
		for i, label := range strings.Split(c, ".") {
			if label == "*" && i == 0 {
				continue
			}
			if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" ||
				label[0] == '-' || label[len(label)-1] == '-' {
				t.Fatalf("%q accepted with the label %q", c, label)
			}
		}
		fqdn := c + "."
		if _, ok := dns.IsDomainName(fqdn); !ok {
			t.Fatalf("%q accepted, and miekg/dns says it is not a domain name", c)
		}
		buf := make([]byte, 512)
		n, err := dns.PackDomainName(fqdn, buf, 0, nil, false)
		if err != nil {
			t.Fatalf("%q accepted, and its wire form does not pack: %v", c, err)
		}
		back, _, err := dns.UnpackDomainName(buf[:n], 0)
		if err != nil || back != fqdn {
			t.Fatalf("%q packs and unpacks to %q (%v)", c, back, err)
		}
		if dns.CanonicalName(fqdn) != fqdn {
			t.Fatalf("%q: miekg/dns' canonical form is %q", c, dns.CanonicalName(fqdn))
		}
		if !InZone(c, c) || !InZone("x."+c, c) || InZone(c, "x."+c) {
			t.Fatalf("InZone of %q and its own zone, or a zone below it, is wrong", c)
		}
		if v, err := CanonicalValue(TypeCNAME, c); err != nil || v != c {
			t.Fatalf("CanonicalValue(CNAME, %q) = %q, %v", c, v, err)
		}
	})
}
