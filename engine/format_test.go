package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type ref struct {
	Name string
	ID   *string // an output: differs between the graph's task and other instances
}

func (r *ref) Key() Key     { return Key{Type: "Ref", Name: r.Name} }
func (r *ref) Deps() []Task { return nil }

// attach holds a dependency as a compared field: it compares, prints and serialises by key.
type attach struct {
	Name   string
	Volume *ref
	Device *string
}

func (a *attach) Key() Key                                                  { return Key{Type: "Attach", Name: a.Name} }
func (a *attach) Deps() []Task                                              { return []Task{a.Volume} }
func (a *attach) Find(context.Context, map[string]*attach) (*attach, error) { return nil, nil }
func (a *attach) CheckChanges(actual, expected, changes *attach) error      { return nil }

func TestFormatValue(t *testing.T) {
	secret := NewSecret("x")
	tests := []struct {
		value any
		text  string
		json  string
	}{
		{nil, "<none>", "null"},
		{(*int)(nil), "<none>", "null"},
		{ptrTo(20), "20", "20"},
		{"", `""`, `""`},
		{&ref{Name: "vol-1"}, "Ref/vol-1", `"Ref/vol-1"`},
		{map[string]int{"b": 2, "a": 1}, "{a: 1, b: 2}", `{"a":1,"b":2}`},
		{[]string{"x", "y"}, "[x, y]", `["x","y"]`},
		{[]byte("text"), "text", `"text"`},
		{[]byte{0xff, 0x00}, "<2 bytes of binary data>", `"/wA="`},
		{struct {
			A int
			S Secret
			p int
		}{A: 1, S: secret}, "{A: 1, S: (sensitive)}", `{"A":1,"S":"(sensitive)"}`},
		{map[string]Secret{"k": secret}, "{k: (sensitive)}", `{"k":"(sensitive)"}`},
		{&secret, "(sensitive)", `"(sensitive)"`},
		{Sync, "Sync", "0"},
	}
	for _, tt := range tests {
		if got := formatValue(tt.value); got != tt.text {
			t.Errorf("formatValue(%#v) = %q, want %q", tt.value, got, tt.text)
		}
		js, err := json.Marshal(jsonValue(tt.value))
		if err != nil {
			t.Fatal(err)
		}
		if string(js) != tt.json {
			t.Errorf("jsonValue(%#v) = %s, want %s", tt.value, js, tt.json)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestTaskFieldsCompareByKey(t *testing.T) {
	actual := &attach{Name: "a", Volume: &ref{Name: "vol-1"}, Device: ptrTo("/dev/xvdu")}
	same := &attach{Name: "a", Volume: &ref{Name: "vol-1"}, Device: ptrTo("/dev/xvdu")}
	other := &attach{Name: "a", Volume: &ref{Name: "vol-2"}, Device: ptrTo("/dev/xvdu")}
	if fields, _ := diff(actual, same); len(fields) != 0 {
		t.Errorf("same key, different pointer: changes %v, want none", fields)
	}
	fields, changes := diff(actual, other)
	want := []FieldChange{{Name: "Volume", Old: actual.Volume, New: other.Volume}}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if changes.Volume != other.Volume || changes.Device != nil {
		t.Errorf("changes = %+v, want only Volume", changes)
	}
	if !tasksEqual(actual, same) || tasksEqual(actual, other) {
		t.Error("tasksEqual does not compare dependencies by key")
	}
	if reflect.TypeOf(changes) != reflect.TypeOf(actual) {
		t.Error("changes is not of the task's type")
	}
}

// refs holds several dependencies: a slice and a map of them compare by key too.
type refs struct {
	Name   string
	List   []*ref
	ByZone map[string]*ref
}

func (r *refs) Key() Key { return Key{Type: "Refs", Name: r.Name} }
func (r *refs) Deps() []Task {
	var deps []Task
	for _, d := range r.List {
		deps = append(deps, d)
	}
	for _, d := range r.ByZone {
		deps = append(deps, d)
	}
	return deps
}

func TestCollectionsOfTasksCompareByKey(t *testing.T) {
	withOutputs := &refs{Name: "r", List: []*ref{{Name: "a", ID: ptrTo("vol-1")}, {Name: "b"}},
		ByZone: map[string]*ref{"z": {Name: "a", ID: ptrTo("vol-1")}}}
	sameKeys := &refs{Name: "r", List: []*ref{{Name: "a"}, {Name: "b"}}, ByZone: map[string]*ref{"z": {Name: "a"}}}
	if fields, _ := diff(withOutputs, sameKeys); len(fields) != 0 {
		t.Errorf("same keys in other instances: changes %v, want none", fields)
	}
	reordered := &refs{Name: "r", List: []*ref{{Name: "b"}, {Name: "a"}}, ByZone: map[string]*ref{"z": {Name: "b"}}}
	fields, _ := diff(withOutputs, reordered)
	if len(fields) != 2 {
		t.Errorf("changes %v, want List (order matters without `set`) and ByZone", fields)
	}
	if got := formatValue(reordered.List); got != "[Ref/b, Ref/a]" {
		t.Errorf("formatValue = %q, want keys", got)
	}
}
