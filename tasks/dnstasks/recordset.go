package dnstasks

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// The record types a Provider manages.
const (
	TypeA     = "A"
	TypeAAAA  = "AAAA"
	TypeCNAME = "CNAME"
	TypeTXT   = "TXT"
)

// types lists the supported record types, sorted.
var types = []string{TypeA, TypeAAAA, TypeCNAME, TypeTXT}

// Supported reports whether rrtype is a record type this package manages, in canonical (upper) case.
func Supported(rrtype string) bool { return slices.Contains(types, rrtype) }

// DefaultTTL is the TTL of a record created without one, in seconds. It is short, as kops' are: records point at
// machines that come and go.
const DefaultTTL = 60

// MaxTTL is the largest TTL DNS allows (RFC 2181, section 8).
const MaxTTL = 1<<31 - 1

// maxTXT bounds a TXT value, in bytes: a record must still fit a DNS message.
const maxTXT = 4000

// ErrOutsideZone is what a Provider wraps when asked for a name that is not in the zone it manages.
var ErrOutsideZone = errors.New("name is outside the zone")

// RecordSet is every record of one name and type, as a Provider stores it.
type RecordSet struct {
	// Name is the fully qualified name, lowercase, without the trailing dot: "api.demo.example.com".
	Name string
	// Type is A, AAAA, CNAME or TXT (see Supported).
	Type string
	// TTL is in seconds.
	TTL int
	// Values are the records' data in canonical form (see CanonicalValue), sorted, without duplicates: an
	// address for A and AAAA, a name for CNAME (one value), the text for TXT.
	Values []string
}

// Provider stores DNS records. Implementations are safe for concurrent use, and classify their errors for the
// engine: engine.Retryable for throttling and server errors, engine.ErrAccessDenied wrapped for permissions,
// ErrOutsideZone wrapped for a name they do not manage; anything else is terminal.
type Provider interface {
	// Get returns the record set of name and type, or nil, nil when there is none.
	Get(ctx context.Context, name, rrtype string) (*RecordSet, error)
	// Upsert creates the record set, or replaces the one of the same name and type. rs must be valid (Validate).
	Upsert(ctx context.Context, rs RecordSet) error
	// Delete removes the record set of name and type; an absent one is not an error.
	Delete(ctx context.Context, name, rrtype string) error
	// List returns every record set of the supported types the provider manages, sorted by name then type.
	List(ctx context.Context) ([]RecordSet, error)
}

// World is a world whose tasks reach a DNS provider: every cloud's world does.
type World interface {
	DNSProvider() Provider
}

// RecordKey is the key of the Record task for a name and type: "DNSRecord/api.demo.example.com/A". The cleanup of
// a cluster reports what it deletes with the same keys.
func RecordKey(name, rrtype string) engine.Key {
	return engine.Key{Type: "DNSRecord", Name: name + "/" + rrtype}
}

// CanonicalName returns name lowercase and without a trailing dot. It does not validate it.
func CanonicalName(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// ValidateName reports whether name is a valid DNS name in canonical form: labels of letters, digits, '-' and
// '_' (for names such as _acme-challenge), at most 63 bytes each and 253 in all, lowercase, no trailing dot. The
// first label may be "*".
func ValidateName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if c := CanonicalName(name); c != name {
		return fmt.Errorf("%q is not in canonical form: write %q", name, c)
	}
	if len(name) > 253 {
		return fmt.Errorf("%q is longer than 253 bytes", name)
	}
	for i, label := range strings.Split(name, ".") {
		if label == "*" && i == 0 {
			continue
		}
		if err := validLabel(label); err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
	}
	return nil
}

func validLabel(label string) error {
	switch {
	case label == "":
		return errors.New("empty label")
	case len(label) > 63:
		return fmt.Errorf("label %q is longer than 63 bytes", label)
	case label[0] == '-' || label[len(label)-1] == '-':
		return fmt.Errorf("label %q starts or ends with '-'", label)
	}
	for _, r := range label {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("label %q has %q: use letters, digits, '-' and '_'", label, r)
		}
	}
	return nil
}

// InZone reports whether the canonical name is zone itself or a name under it.
func InZone(name, zone string) bool {
	return name == zone || strings.HasSuffix(name, "."+zone)
}

// validateType reports whether rrtype is a supported type, in canonical (upper) case.
func validateType(rrtype string) error {
	if Supported(rrtype) {
		return nil
	}
	if u := strings.ToUpper(rrtype); Supported(u) {
		return fmt.Errorf("%q is not in canonical form: write %q", rrtype, u)
	}
	return fmt.Errorf("%q is not a supported record type: use one of %s", rrtype, strings.Join(types, ", "))
}

// CanonicalValue returns v in the canonical form of a value of type rrtype: an address as netip prints it, a
// CNAME target as a canonical name, a TXT value as is. An invalid value is an error.
func CanonicalValue(rrtype, v string) (string, error) {
	switch rrtype {
	case TypeA, TypeAAAA:
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" {
			return "", fmt.Errorf("%q is not an IP address", v)
		}
		if rrtype == TypeA && !a.Is4() {
			return "", fmt.Errorf("%q is not an IPv4 address: an A record holds IPv4 addresses, AAAA holds IPv6", v)
		}
		if rrtype == TypeAAAA && !a.Is6() {
			return "", fmt.Errorf("%q is not an IPv6 address: an AAAA record holds IPv6 addresses, A holds IPv4", v)
		}
		return a.String(), nil
	case TypeCNAME:
		c := CanonicalName(v)
		if err := ValidateName(c); err != nil {
			return "", fmt.Errorf("CNAME target: %w", err)
		}
		return c, nil
	case TypeTXT:
		if len(v) > maxTXT {
			return "", fmt.Errorf("TXT value of %d bytes is longer than %d", len(v), maxTXT)
		}
		return v, nil
	}
	return "", validateType(rrtype)
}

// validateValues reports whether values are valid for rrtype, in canonical form and without duplicates. It
// does not require them sorted.
func validateValues(rrtype string, values []string) error {
	if len(values) == 0 {
		return errors.New("at least one value is required")
	}
	if rrtype == TypeCNAME && len(values) > 1 {
		return fmt.Errorf("a CNAME record has exactly one value, not %d", len(values))
	}
	seen := map[string]bool{}
	for _, v := range values {
		c, err := CanonicalValue(rrtype, v)
		if err != nil {
			return err
		}
		if c != v {
			return fmt.Errorf("%q is not in canonical form: write %q", v, c)
		}
		if seen[v] {
			return fmt.Errorf("%q is listed twice", v)
		}
		seen[v] = true
	}
	return nil
}

func validateTTL(ttl int) error {
	if ttl < 0 || ttl > MaxTTL {
		return fmt.Errorf("%d is not between 0 and %d seconds", ttl, MaxTTL)
	}
	return nil
}

// Validate reports whether rs is a valid record set in canonical form, with its values sorted. Providers call it
// before they store anything.
func (rs RecordSet) Validate() error {
	invalid := func(what string, err error) error {
		return fmt.Errorf("invalid record set %s %s: %s: %w", rs.Name, rs.Type, what, err)
	}
	if err := ValidateName(rs.Name); err != nil {
		return invalid("name", err)
	}
	if err := validateType(rs.Type); err != nil {
		return invalid("type", err)
	}
	if err := validateTTL(rs.TTL); err != nil {
		return invalid("TTL", err)
	}
	if err := validateValues(rs.Type, rs.Values); err != nil {
		return invalid("values", err)
	}
	if !slices.IsSorted(rs.Values) {
		return invalid("values", errors.New("not sorted"))
	}
	return nil
}
