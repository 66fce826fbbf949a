package dnstasks

import (
	"context"
	"fmt"
	"slices"

	"kubeup.dev/kubeup/engine"
)

// Record is a DNS record set: every record of one name and type. It is generic in the world so that every
// cloud's graph can hold it:
//
//	engine.Add(g, &dnstasks.Record[*localtasks.Cloud]{Name: "api.demo.example.com", Type: "A", Values: ips})
//
// Its key is "DNSRecord/NAME/TYPE" (RecordKey).
type Record[C World] struct {
	// Name is the fully qualified name, lowercase, without the trailing dot: "api.demo.example.com".
	Name string
	// Type is A, AAAA, CNAME or TXT, upper case.
	Type string
	// TTL in seconds; nil keeps the record's TTL, or gives a new record DefaultTTL.
	TTL *int
	// Values are the records' data, in any order, in canonical form: IPv4 addresses for A, IPv6 for AAAA (as
	// net/netip prints them), one canonical name for CNAME, any text for TXT. At least one.
	Values []string `kubeup:"set"`
	// Placeholder creates the record with Values (and TTL) when it is absent, but never changes an existing one:
	// something else owns it once it exists (protokube publishes the real addresses, as kops' dns-controller
	// did over its placeholder 203.0.113.123). Find reports an existing record's Values and TTL as the task's,
	// so a placeholder never shows a difference.
	Placeholder bool `kubeup:"-"`
}

var (
	_ engine.Resource[*Record[World], World] = (*Record[World])(nil)
	_ engine.Renderer[*Record[World], World] = (*Record[World])(nil)
	_ engine.Classed                         = (*Record[World])(nil)
)

func (r *Record[C]) Key() engine.Key     { return RecordKey(r.Name, r.Type) }
func (r *Record[C]) Deps() []engine.Task { return nil }

// APIClass puts every DNS record of a graph in one API class, so that a throttling DNS API slows them together.
func (r *Record[C]) APIClass() string { return "dns" }

// Find reads the record set; nil when it is absent. It normalises what the provider returns (a provider should
// already): the name lowercase without the trailing dot, values in canonical form, sorted, without duplicates. A
// name or type that is not valid cannot exist: Find returns nil, and CheckChanges says what is wrong.
func (r *Record[C]) Find(ctx context.Context, world C) (*Record[C], error) {
	if ValidateName(r.Name) != nil || validateType(r.Type) != nil {
		return nil, nil
	}
	rs, err := world.DNSProvider().Get(ctx, r.Name, r.Type)
	if err != nil {
		return nil, fmt.Errorf("reading DNS record %s %s: %w", r.Name, r.Type, err)
	}
	if rs == nil {
		return nil, nil
	}
	ttl := rs.TTL
	found := &Record[C]{Name: CanonicalName(rs.Name), Type: rs.Type, TTL: &ttl, Placeholder: r.Placeholder}
	for _, v := range rs.Values {
		if c, err := CanonicalValue(rs.Type, v); err == nil {
			v = c
		}
		found.Values = append(found.Values, v)
	}
	slices.Sort(found.Values)
	found.Values = slices.Compact(found.Values)
	if r.Placeholder {
		// The record exists: it is no longer ours to change.
		found.Values = r.Values
		if r.TTL != nil {
			found.TTL = r.TTL
		}
	}
	return found, nil
}

// CheckChanges refuses a record that is not valid: a name or type not in canonical form, an unsupported type,
// a TTL out of range, no values, or values that do not suit the type.
func (r *Record[C]) CheckChanges(actual, expected, changes *Record[C]) error {
	if err := ValidateName(expected.Name); err != nil {
		return fmt.Errorf("field Name: %w", err)
	}
	if err := validateType(expected.Type); err != nil {
		return fmt.Errorf("field Type: %w", err)
	}
	if expected.TTL != nil {
		if err := validateTTL(*expected.TTL); err != nil {
			return fmt.Errorf("field TTL: %w", err)
		}
	}
	if err := validateValues(expected.Type, expected.Values); err != nil {
		return fmt.Errorf("field Values of %s %s: %w", expected.Name, expected.Type, err)
	}
	return nil
}

// Render creates or replaces the record set with the expected values. A TTL left nil keeps the record's own,
// or is DefaultTTL for a new record.
func (r *Record[C]) Render(ctx context.Context, world C, actual, expected, changes *Record[C]) error {
	ttl := DefaultTTL
	switch {
	case expected.TTL != nil:
		ttl = *expected.TTL
	case actual != nil && actual.TTL != nil:
		ttl = *actual.TTL
	}
	rs := RecordSet{Name: expected.Name, Type: expected.Type, TTL: ttl, Values: slices.Sorted(slices.Values(expected.Values))}
	if err := rs.Validate(); err != nil {
		return err // CheckChanges refuses what Validate does: not reached
	}
	if err := world.DNSProvider().Upsert(ctx, rs); err != nil {
		return fmt.Errorf("writing DNS record %s %s: %w", rs.Name, rs.Type, err)
	}
	engine.Logger(ctx).Info("wrote DNS record", "name", rs.Name, "type", rs.Type, "ttl", rs.TTL, "values", rs.Values)
	return nil
}
