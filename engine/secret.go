package engine

import (
	"encoding/json"
	"fmt"
	"log/slog"
)

// Redacted is how a Secret appears in every report, log line and plan.
const Redacted = "(sensitive)"

// Secret holds a value that must never be printed: keys, tokens, passwords. It compares by value, so a change
// to it is still detected and applied, but fmt, JSON, slog and the dry-run report all show it as (sensitive).
type Secret struct {
	value string
}

// NewSecret wraps a sensitive value.
func NewSecret(value string) Secret { return Secret{value: value} }

// Reveal returns the value, for the code that must use it (writing a file, calling an API).
func (s Secret) Reveal() string { return s.value }

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
