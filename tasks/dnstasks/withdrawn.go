package dnstasks

import (
	"context"
	"fmt"
	"slices"

	"kubeup.dev/kubeup/engine"
)

// Withdrawn is a value that a record set must not hold: protokube's address in the name of an etcd member it no
// longer serves. Find reports whether the set holds the value; Render removes it, and the whole set when it was
// the last value. The other values of the set (another node's) are never touched, so a node that withdraws and
// the node that publishes the same name never undo each other.
//
//	engine.Add(g, &dnstasks.Withdrawn[*protokube.Round]{Name: "a.etcd-main.internal.demo.example.com", Type: "A", Value: "10.0.0.7"})
//
// Its key is "DNSWithdrawn/NAME/TYPE/VALUE".
type Withdrawn[C World] struct {
	// Name and Type are the record set's, as in Record.
	Name, Type string
	// Value is the value to withdraw, in canonical form.
	Value string
	// Held is what Find saw: whether the set holds Value. The task wants it false.
	Held bool
}

var (
	_ engine.Resource[*Withdrawn[World], World] = (*Withdrawn[World])(nil)
	_ engine.Renderer[*Withdrawn[World], World] = (*Withdrawn[World])(nil)
	_ engine.Classed                            = (*Withdrawn[World])(nil)
	_ engine.Validator                          = (*Withdrawn[World])(nil)
)

func (w *Withdrawn[C]) Key() engine.Key {
	return engine.Key{Type: "DNSWithdrawn", Name: w.Name + "/" + w.Type + "/" + w.Value}
}
func (w *Withdrawn[C]) Deps() []engine.Task { return nil }
func (w *Withdrawn[C]) APIClass() string    { return "dns" }

// Validate checks the name, the type and the value's form.
func (w *Withdrawn[C]) Validate() error {
	if err := ValidateName(w.Name); err != nil {
		return fmt.Errorf("name: %w", err)
	}
	if err := validateType(w.Type); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	if c, err := CanonicalValue(w.Type, w.Value); err != nil || c != w.Value {
		return fmt.Errorf("value %q is not a %s value in canonical form", w.Value, w.Type)
	}
	if w.Held {
		return fmt.Errorf("held: a Withdrawn task wants the value gone (leave Held false)")
	}
	return nil
}

// Find reports whether the record set holds the value. It never returns nil: a set without it is the task done.
func (w *Withdrawn[C]) Find(ctx context.Context, world C) (*Withdrawn[C], error) {
	rs, err := world.DNSProvider().Get(ctx, w.Name, w.Type)
	if err != nil {
		return nil, fmt.Errorf("reading DNS record %s %s: %w", w.Name, w.Type, err)
	}
	found := &Withdrawn[C]{Name: w.Name, Type: w.Type, Value: w.Value}
	if rs != nil {
		found.Held = slices.ContainsFunc(rs.Values, func(v string) bool {
			c, err := CanonicalValue(rs.Type, v)
			return err == nil && c == w.Value
		})
	}
	return found, nil
}

func (w *Withdrawn[C]) CheckChanges(actual, expected, changes *Withdrawn[C]) error { return nil }

// Render removes the value from the record set as it is now, and the set when nothing else is left in it.
func (w *Withdrawn[C]) Render(ctx context.Context, world C, actual, expected, changes *Withdrawn[C]) error {
	p := world.DNSProvider()
	rs, err := p.Get(ctx, w.Name, w.Type)
	if err != nil || rs == nil {
		return err
	}
	rest := slices.DeleteFunc(slices.Clone(rs.Values), func(v string) bool {
		c, err := CanonicalValue(rs.Type, v)
		return err == nil && c == w.Value
	})
	if len(rest) == len(rs.Values) {
		return nil
	}
	if len(rest) == 0 {
		err = p.Delete(ctx, w.Name, w.Type)
	} else {
		err = p.Upsert(ctx, RecordSet{Name: rs.Name, Type: rs.Type, TTL: rs.TTL, Values: rest})
	}
	if err != nil {
		return fmt.Errorf("withdrawing %s from DNS record %s %s: %w", w.Value, w.Name, w.Type, err)
	}
	engine.Logger(ctx).Info("withdrew a DNS value", "name", w.Name, "type", w.Type, "value", w.Value, "left", rest)
	return nil
}
