package dnstasks

import (
	"context"
	"fmt"
	"slices"

	"kubeup.dev/kubeup/engine"
)

// Shared is one writer's part of a record set that several writers keep together, each its own value: the API's
// names, in which every control-plane node publishes its own address while its kube-apiserver is ready. A writer
// adds its Value while Present, and removes it otherwise; it also removes the values no writer may hold any more
// (a value outside Keep: a node that lost its claim, or the placeholder once a real value is there). When the
// set would be left empty it holds Fallback instead, so that the name never goes (a resolver would cache its
// absence). The other writers' values in Keep are never touched, so writers never undo each other's additions.
//
//	engine.Add(g, &dnstasks.Shared[*protokube.Round]{Name: "api.internal.demo.example.com", Type: "A",
//		Value: "10.0.0.7", Present: ready, Keep: holders, Fallback: "203.0.113.123"})
//
// Two writers that change the set at the same moment may lose one's change (each writes the set it read): the
// next run of the loser makes it again, as every run converges from what it reads.
//
// Its key is "DNSShared/NAME/TYPE/VALUE".
type Shared[C World] struct {
	// Name and Type are the record set's, as in Record.
	Name, Type string
	// Value is this writer's value, in canonical form.
	Value string
	// Present says whether Value belongs in the set. Find reports whether the set holds it.
	Present bool
	// Stale are the values of the set that no writer may hold (outside Keep, not Value, not the Fallback of an
	// otherwise empty set): Find reports them, sorted; the task wants none.
	Stale []string `kubeup:"nilempty"`
	// TTL in seconds of a set this writer writes; nil keeps the set's own.
	TTL *int `kubeup:"-"`
	// Keep are the values other writers may hold, in canonical form: the set loses any other.
	Keep []string `kubeup:"-"`
	// Fallback, in canonical form, is what the set holds when no writer's value is left in it; "" lets the set go.
	// A set that does not exist is not made to hold it.
	Fallback string `kubeup:"-"`
}

var (
	_ engine.Resource[*Shared[World], World] = (*Shared[World])(nil)
	_ engine.Renderer[*Shared[World], World] = (*Shared[World])(nil)
	_ engine.Classed                         = (*Shared[World])(nil)
	_ engine.Validator                       = (*Shared[World])(nil)
)

func (s *Shared[C]) Key() engine.Key {
	return engine.Key{Type: "DNSShared", Name: s.Name + "/" + s.Type + "/" + s.Value}
}
func (s *Shared[C]) Deps() []engine.Task { return nil }
func (s *Shared[C]) APIClass() string    { return "dns" }

// Validate checks the name, the type, and the form of every value.
func (s *Shared[C]) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return fmt.Errorf("name: %w", err)
	}
	if err := validateType(s.Type); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	if s.TTL != nil {
		if err := validateTTL(*s.TTL); err != nil {
			return fmt.Errorf("ttl: %w", err)
		}
	}
	values := append([]string{s.Value}, s.Keep...)
	if s.Fallback != "" {
		values = append(values, s.Fallback)
	}
	for _, v := range values {
		if c, err := CanonicalValue(s.Type, v); err != nil || c != v {
			return fmt.Errorf("value %q is not a %s value in canonical form", v, s.Type)
		}
	}
	if len(s.Stale) > 0 {
		return fmt.Errorf("stale: a Shared task wants no stale value (leave Stale empty)")
	}
	return nil
}

// next returns the values the set should hold after this writer's change, given those it holds (canonical),
// sorted: the values of Keep it holds, Value while Present, and Fallback when nothing else is left of a set that
// exists.
func (s *Shared[C]) next(values []string) []string {
	var want []string
	for _, v := range values {
		if v != s.Value && slices.Contains(s.Keep, v) {
			want = append(want, v)
		}
	}
	if s.Present {
		want = append(want, s.Value)
	}
	if len(want) == 0 && len(values) > 0 && s.Fallback != "" {
		want = append(want, s.Fallback)
	}
	slices.Sort(want)
	return slices.Compact(want)
}

// canonicalValues returns the set's values in canonical form (one that is not valid kept as it is: it is stale),
// sorted, without duplicates; nil for a set that does not exist.
func canonicalValues(rs *RecordSet) []string {
	if rs == nil {
		return nil
	}
	var values []string
	for _, v := range rs.Values {
		if c, err := CanonicalValue(rs.Type, v); err == nil {
			v = c
		}
		values = append(values, v)
	}
	slices.Sort(values)
	return slices.Compact(values)
}

// Find reports whether the set holds Value, and its stale values. It never returns nil: a set that does not
// exist holds nothing.
func (s *Shared[C]) Find(ctx context.Context, world C) (*Shared[C], error) {
	rs, err := world.DNSProvider().Get(ctx, s.Name, s.Type)
	if err != nil {
		return nil, fmt.Errorf("reading DNS record %s %s: %w", s.Name, s.Type, err)
	}
	values := canonicalValues(rs)
	found := &Shared[C]{Name: s.Name, Type: s.Type, Value: s.Value, Present: slices.Contains(values, s.Value),
		TTL: s.TTL, Keep: s.Keep, Fallback: s.Fallback}
	want := s.next(values)
	for _, v := range values {
		if v != s.Value && !slices.Contains(want, v) {
			found.Stale = append(found.Stale, v)
		}
	}
	return found, nil
}

func (s *Shared[C]) CheckChanges(actual, expected, changes *Shared[C]) error { return nil }

// Render writes the set as it should be after this writer's change to the set as it is now (read again): its
// kept values, Value while Present, Fallback when nothing else is left; it removes the set when nothing is left
// and there is no Fallback.
func (s *Shared[C]) Render(ctx context.Context, world C, actual, expected, changes *Shared[C]) error {
	p := world.DNSProvider()
	rs, err := p.Get(ctx, s.Name, s.Type)
	if err != nil {
		return fmt.Errorf("reading DNS record %s %s: %w", s.Name, s.Type, err)
	}
	values := canonicalValues(rs)
	want := expected.next(values)
	if slices.Equal(values, want) {
		return nil
	}
	switch {
	case len(want) == 0:
		err = p.Delete(ctx, s.Name, s.Type)
	default:
		ttl := DefaultTTL
		switch {
		case expected.TTL != nil:
			ttl = *expected.TTL
		case rs != nil:
			ttl = rs.TTL
		}
		err = p.Upsert(ctx, RecordSet{Name: s.Name, Type: s.Type, TTL: ttl, Values: want})
	}
	if err != nil {
		return fmt.Errorf("writing DNS record %s %s: %w", s.Name, s.Type, err)
	}
	engine.Logger(ctx).Info("wrote a shared DNS record", "name", s.Name, "type", s.Type, "value", s.Value, "present", expected.Present, "was", values, "now", want)
	return nil
}
