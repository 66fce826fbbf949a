package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// secretMark starts and ends every secret of FuzzPrinter, and no other value holds it (nor the forms fmt,
// strconv and encoding/json escape it to): a plan that shows any of them shows a piece of a secret.
const secretMark = "\x01"

// markForms are the forms secretMark takes in the plans' encodings.
var markForms = []string{secretMark, `\u0001`, `\x01`, `\001`, `\U00000001`}

// withoutMark removes every form of secretMark from s, until none is left.
func withoutMark(s string) string {
	for {
		t := s
		for _, m := range markForms {
			t = strings.ReplaceAll(t, m, "")
		}
		if t == s {
			return s
		}
		s = t
	}
}

// fuzzSecrets is a field of every shape a secret can take in a task.
type fuzzSecrets struct {
	Name    string
	Key     Secret
	KeyPtr  *Secret
	Keys    []Secret
	ByName  map[string]Secret
	ByKey   map[Secret]string
	Pair    [2]Secret
	Any     any
	Nested  *fuzzNested
	private Secret
}

type fuzzNested struct {
	Token Secret
	Deep  map[string]any
}

// FuzzPrinter writes plans of arbitrary field values, plain and secret, in text (WriteText) and JSON
// (WriteJSON), on create and on modify, with the spec's changes and their echoes. Properties: nothing panics,
// neither writer fails; the JSON plan is valid JSON of its apiVersion whose summary counts the changes and
// whose created plain values are the values themselves; both plans name every change's key; and no secret, nor
// any piece of one, appears in either, in any escaping. The seeds are below and in testdata/fuzz/FuzzPrinter
// (inputs the fuzzer found).
func FuzzPrinter(f *testing.F) {
	f.Add("s3cr3t-key", "api", "line one\nline two\n", "line one\nline 2\n", []byte("bytes"), int64(7), 1.5, true)
	f.Add("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n", "x/y", "a: 1\nb: [x, y]\n", "a: 2\nb: [x]\n",
		[]byte{0xff, 0xfe}, int64(-1), math.NaN(), false)
	f.Add("", "", "", "", []byte(nil), int64(0), 0.0, false)
	f.Add("k", "kubelet", "--a=1\n--b=2\n", "--a=1\n--b=3\n--c\n", []byte("apiVersion: v1\nkind: X\n"), int64(1<<40), math.Inf(1), true)
	f.Fuzz(func(t *testing.T, secret, name, oldText, newText string, raw []byte, n int64, x float64, flag bool) {
		name, oldText, newText = withoutMark(name), withoutMark(oldText), withoutMark(newText)
		raw = []byte(withoutMark(string(raw)))
		core := secret
		secret = secretMark + secret + secretMark
		s := NewSecret(secret)
		secrets := fuzzSecrets{
			Name: name, Key: s, KeyPtr: &s, Keys: []Secret{s, s}, ByName: map[string]Secret{name: s},
			ByKey: map[Secret]string{s: name}, Pair: [2]Secret{s, s}, Any: s,
			Nested: &fuzzNested{Token: s, Deep: map[string]any{"k": []any{s, &s, map[string]Secret{"x": s}}}}, private: s,
		}
		plainNew := []FieldChange{
			{Name: "Name", New: name},
			{Name: "Text", New: newText},
			{Name: "Raw", New: raw},
			{Name: "Count", New: &n},
			{Name: "Ratio", New: x},
			{Name: "Flag", New: flag},
			{Name: "Tags", New: map[string]string{name: newText}},
		}
		secretNew := []FieldChange{
			{Name: "Secret", New: s},
			{Name: "SecretPtr", New: &s},
			{Name: "Secrets", New: secrets},
			{Name: "SecretsPtr", New: &secrets},
		}
		p := &Plan{
			Changes: []Change{
				{Key: Key{Type: "Created", Name: name}, Action: Create, Fields: append(append([]FieldChange{}, plainNew...), secretNew...)},
				{Key: Key{Type: "Modified", Name: name}, Action: Modify, Fields: []FieldChange{
					{Name: "Text", Old: oldText, New: newText},
					{Name: "Raw", Old: []byte(oldText), New: raw},
					{Name: "Count", Old: n - 1, New: n},
					{Name: "Secret", Old: s, New: NewSecret(secret + "new")},
					{Name: "Secrets", Old: secrets, New: &secrets},
					{Name: "SecretToText", Old: s, New: newText},
					{Name: "TextToSecret", Old: oldText, New: &s},
				}},
			},
			Spec: []PathChange{
				{Path: "spec.token", Old: s, New: NewSecret(secret + "2")},
				{Path: "spec.tokens", Old: map[string]any{"a": s}, New: []any{&s}},
			},
		}
		if changes, ok := DiffStructured(oldText, newText); ok {
			p.Spec = append(p.Spec, changes...)
			p.Echoes = []Echo{{Key: Key{Type: "Modified", Name: name}, Field: "Text"}}
		}
		var text, js bytes.Buffer
		if err := p.WriteText(&text); err != nil {
			t.Fatalf("WriteText: %v", err)
		}
		if err := p.WriteJSON(&js); err != nil {
			t.Fatalf("WriteJSON: %v", err)
		}
		// fmt too, as a log line or an error that holds a task would print it: unexported fields included.
		printed := fmt.Sprintf("%v %+v %#v", secrets, &secrets, secrets)
		for what, out := range map[string]string{"text plan": text.String(), "JSON plan": js.String(), "fmt": printed} {
			for _, m := range markForms {
				// Case matters: %#v writes the rune U+1F7DF as \U0001f7df, which is not \u0001.
				if strings.Contains(out, m) {
					t.Fatalf("the %s shows a piece of a secret (%q):\n%s", what, m, out)
				}
			}
			if len(core) >= 6 && !strings.Contains(name+oldText+newText+string(raw), core) && strings.Contains(out, core) {
				t.Fatalf("the %s shows the secret %q:\n%s", what, core, out)
			}
		}
		for _, c := range p.Changes {
			if !strings.Contains(text.String(), c.Key.String()) {
				t.Fatalf("the text plan does not name %s:\n%s", c.Key, text.String())
			}
		}
		var plan struct {
			APIVersion string
			Summary    struct{ Create, Modify, Delete int }
			Changes    []struct {
				Key    string
				Fields []struct {
					Name  string
					After json.RawMessage
				}
			}
		}
		if err := json.Unmarshal(js.Bytes(), &plan); err != nil {
			t.Fatalf("the JSON plan does not decode: %v\n%s", err, js.String())
		}
		if plan.APIVersion != PlanAPIVersion || plan.Summary.Create != 1 || plan.Summary.Modify != 1 || len(plan.Changes) != 2 {
			t.Fatalf("the JSON plan's apiVersion %q, summary %+v, %d changes", plan.APIVersion, plan.Summary, len(plan.Changes))
		}
		created := plan.Changes[0] // in the plan's order
		if want := string([]rune("Created/" + name)); created.Key != want {
			t.Fatalf("the JSON plan's first change is %q, want %q", created.Key, want)
		}
		for _, f := range created.Fields {
			var got any
			if err := json.Unmarshal(f.After, &got); err != nil {
				t.Fatalf("field %s: %v", f.Name, err)
			}
			switch f.Name {
			case "Name", "Text":
				want := map[string]string{"Name": name, "Text": newText}[f.Name]
				if got != string([]rune(want)) { // encoding/json writes each invalid byte as U+FFFD

					t.Fatalf("the JSON plan's %s is %q, want %q", f.Name, got, want)
				}
			case "Count":
				if got != float64(n) {
					t.Fatalf("the JSON plan's Count is %v, want %d", got, n)
				}
			}
		}
	})
}

// TestWriteJSONValuesWithoutJSONForm: a field whose value JSON cannot hold (NaN, an infinity, a complex number,
// found by FuzzPrinter) made WriteJSON fail, and with it `update -o json`. It is written as the text plan shows it.
func TestWriteJSONValuesWithoutJSONForm(t *testing.T) {
	p := &Plan{Changes: []Change{{Key: Key{Type: "T", Name: "n"}, Action: Create, Fields: []FieldChange{
		{Name: "NaN", New: math.NaN()},
		{Name: "Inf", New: []float64{math.Inf(1), math.Inf(-1), 1.5}},
		{Name: "Float32", New: map[string]float32{"x": float32(math.Inf(1))}},
		{Name: "Complex", New: complex(1, 2)},
	}}}}
	var js bytes.Buffer
	if err := p.WriteJSON(&js); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	for _, want := range []string{`"after": "NaN"`, `"+Inf",`, `"-Inf",`, `1.5`, `"x": "+Inf"`, `"after": "(1+2i)"`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("the JSON plan lacks %s:\n%s", want, js.String())
		}
	}
}

// TestSecretInUnexportedField: fmt prints a struct's unexported fields without calling their methods, so a Secret
// held in one (a provider's TSIG secret) was printed as {value}. It holds a pointer, which fmt prints as an address.
func TestSecretInUnexportedField(t *testing.T) {
	type provider struct {
		server string
		secret Secret
		all    []Secret
	}
	const value = "c2VudGluZWwtc2VjcmV0"
	p := provider{server: "ns1", secret: NewSecret(value), all: []Secret{NewSecret(value)}}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X"} {
		if out := fmt.Sprintf(format, p) + fmt.Sprintf(format, &p); strings.Contains(out, value) ||
			strings.Contains(out, fmt.Sprintf("%x", value)) || strings.Contains(out, fmt.Sprintf("%X", value)) {
			t.Errorf("%s shows the secret: %s", format, out)
		}
	}
	if !NewSecret(value).Equal(NewSecret(value)) || !reflect.DeepEqual(NewSecret(value), NewSecret(value)) ||
		NewSecret(value).Equal(NewSecret(value+"x")) || !reflect.DeepEqual(NewSecret(""), Secret{}) {
		t.Error("secrets do not compare by value")
	}
	if NewSecret(value).Reveal() != value || (Secret{}).Reveal() != "" {
		t.Error("Reveal does not return the value")
	}
}
