package engine

import (
	"encoding/json"
	"fmt"
	"log/slog"
)

// Redacted is how a Secret appears in every report, log line and plan.
const Redacted = "(sensitive)"

// Secret holds a value that must never be printed: keys, tokens, passwords. It compares by value (Equal,
// reflect.DeepEqual, go-cmp; not ==), so a change to it is still detected and applied, but fmt, JSON, slog and
// the dry-run report all show it as (sensitive).
type Secret struct {
	// p points at the value. fmt prints a Secret held in an unexported field without calling its methods, field
	// by field, and a pointer inside a struct as its address only: the value never shows.
	p *string
}

// NewSecret wraps a sensitive value.
func NewSecret(value string) Secret {
	if value == "" {
		return Secret{} // equal to the zero Secret, as the empty value is
	}
	return Secret{p: &value}
}

// Reveal returns the value, for the code that must use it (writing a file, calling an API).
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// Equal reports whether s and o hold the same value.
func (s Secret) Equal(o Secret) bool { return s.Reveal() == o.Reveal() }

func (s Secret) String() string                { return Redacted }
func (s Secret) GoString() string              { return Redacted }
func (s Secret) Format(f fmt.State, verb rune) { fmt.Fprint(f, Redacted) }
func (s Secret) LogValue() slog.Value          { return slog.StringValue(Redacted) }
func (s Secret) MarshalJSON() ([]byte, error)  { return json.Marshal(Redacted) }
func (s Secret) MarshalText() ([]byte, error)  { return []byte(Redacted), nil }

var (
	_ fmt.Formatter  = Secret{}
	_ slog.LogValuer = Secret{}
	_ json.Marshaler = Secret{}
)
