package engine

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Field rules are declared with the `kubeup` struct tag, comma-separated:
//
//	Tags     map[string]string `kubeup:"nilempty"` // nil and empty are the same
//	Zones    []string          `kubeup:"set"`      // order does not matter
//	ID       *string           `kubeup:"output"`   // set by Find or Render; never compared
//	cache    ...               (unexported fields are never compared)
//	Scratch  string            `kubeup:"-"`        // not part of the desired state
//
// Without a tag: a nil pointer or nil interface in the expected task means "don't care"; everything else is
// compared by value (maps and slices element by element, a field holding a Task by its key).
const tagName = "kubeup"

type fieldInfo struct {
	name     string
	index    int
	set      bool // compare a slice without regard to order
	nilEmpty bool // nil and empty map/slice are the same
	output   bool // written by Find/Render, copied from actual to expected, never compared
	identity bool // the string field that names the task (Name, or the first field): not listed on create
}

type typeInfo struct {
	fields  []fieldInfo
	outputs bool // some field is an output
}

var typeInfos sync.Map // reflect.Type (struct) -> *typeInfo

// typeInfoOf returns the field rules of struct type t, parsed once per type.
func typeInfoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		fi := fieldInfo{name: sf.Name, index: i}
		fi.identity = sf.Type.Kind() == reflect.String && (sf.Name == "Name" || i == 0)
		skip := false
		for _, opt := range strings.Split(sf.Tag.Get(tagName), ",") {
			switch strings.TrimSpace(opt) {
			case "":
			case "-":
				skip = true
			case "set":
				fi.set = true
			case "nilempty":
				fi.nilEmpty = true
			case "output":
				fi.output = true
			default:
				panic(fmt.Sprintf("engine: %s.%s: unknown %s tag option %q", t, sf.Name, tagName, opt))
			}
		}
		if fi.set && sf.Type.Kind() != reflect.Slice {
			panic(fmt.Sprintf("engine: %s.%s: only a slice can be a set", t, sf.Name))
		}
		if k := sf.Type.Kind(); fi.nilEmpty && k != reflect.Slice && k != reflect.Map {
			panic(fmt.Sprintf("engine: %s.%s: only a map or a slice can be nilempty", t, sf.Name))
		}
		if !skip {
			ti.fields = append(ti.fields, fi)
			ti.outputs = ti.outputs || fi.output
		}
	}
	actual, _ := typeInfos.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

// structOf returns the struct a task pointer points to. Tasks are pointers to structs; anything else is a
// programmer error caught when the task is added.
func structOf(task any) reflect.Value {
	v := reflect.ValueOf(task)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("engine: a task must be a non-nil pointer to a struct, got %T", task))
	}
	return v.Elem()
}

// FieldChange is one field of a planned change. Old is nil on create.
type FieldChange struct {
	Name string
	Old  any
	New  any
}

// diff compares actual with expected field by field. It returns the changed fields (in declaration order) and
// a new task value holding only those fields. actual == nil means create: every field expected sets is listed.
func diff[T any](actual, expected T) (fields []FieldChange, changes T) {
	return diffOf(typeInfoOf(structOf(expected).Type()), actual, expected)
}

// diffOf is diff with the field rules of T's struct, ti, at hand.
func diffOf[T any](ti *typeInfo, actual, expected T) (fields []FieldChange, changes T) {
	ev := structOf(expected)
	var cv reflect.Value // the changes, allocated when the first difference is found
	set := func(f fieldInfo, v reflect.Value) {
		if !cv.IsValid() {
			cv = reflect.New(ev.Type())
		}
		cv.Elem().Field(f.index).Set(v)
	}
	creating := isNil(actual)
	var av reflect.Value
	if !creating {
		av = structOf(actual)
	}
	name := ""
	if creating {
		name = any(expected).(Task).Key().Name
	}
	for _, f := range ti.fields {
		if f.output {
			continue
		}
		e := ev.Field(f.index)
		if creating {
			set(f, e)
			if isUnset(e) || (f.identity && e.String() == name) {
				continue // nothing to say, or the key already says it
			}
			fields = append(fields, FieldChange{Name: f.name, New: e.Interface()})
			continue
		}
		if dontCare(e) {
			continue
		}
		a := av.Field(f.index)
		if fieldEqual(f, a, e) {
			continue
		}
		set(f, e)
		fields = append(fields, FieldChange{Name: f.name, Old: valueOrNil(a), New: e.Interface()})
	}
	if creating && !cv.IsValid() {
		cv = reflect.New(ev.Type()) // a task with no comparable fields is still created
	}
	if cv.IsValid() {
		changes = cv.Interface().(T)
	}
	return fields, changes
}

// copyOutputs writes the output fields Find discovered into expected, where expected has none yet; ti is the
// field rules of the tasks' struct.
func copyOutputs(ti *typeInfo, actual, expected any) {
	if !ti.outputs {
		return
	}
	av, ev := structOf(actual), structOf(expected)
	for _, f := range ti.fields {
		if f.output && isUnset(ev.Field(f.index)) {
			ev.Field(f.index).Set(av.Field(f.index))
		}
	}
}

// dontCare reports whether an expected value leaves the field to whatever the world has.
func dontCare(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// isUnset reports whether a value says nothing: nil, or the zero value of its type.
func isUnset(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		return v.Len() == 0
	}
	return v.IsZero()
}

func valueOrNil(v reflect.Value) any {
	if dontCare(v) {
		return nil
	}
	return v.Interface()
}

func fieldEqual(f fieldInfo, a, e reflect.Value) bool {
	if f.nilEmpty && a.Len() == 0 && e.Len() == 0 {
		return true
	}
	if f.set {
		return setEqual(a, e)
	}
	return valueEqual(a, e)
}

var taskType = reflect.TypeFor[Task]()

// valueEqual is reflect.DeepEqual, except that tasks (references to other tasks), also inside slices, arrays
// and maps, are equal when their keys are: a reference says which task, not what that task holds.
func valueEqual(a, e reflect.Value) bool {
	switch a.Kind() { // no boxing for the common scalar fields
	case reflect.String:
		return a.String() == e.String()
	case reflect.Bool:
		return a.Bool() == e.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == e.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return a.Uint() == e.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == e.Float()
	}
	if a.Kind() == reflect.Pointer && !a.Type().Implements(taskType) {
		// Most fields are pointers to scalars: compare what they point to without boxing (as DeepEqual does).
		if a.IsNil() || e.IsNil() {
			return a.IsNil() == e.IsNil()
		}
		if a.Pointer() == e.Pointer() {
			return true
		}
		return valueEqual(a.Elem(), e.Elem())
	}
	if !holdsTasks(a.Type()) {
		return reflect.DeepEqual(a.Interface(), e.Interface())
	}
	if a.Type().Implements(taskType) || a.Kind() == reflect.Interface {
		if a.IsZero() || e.IsZero() {
			return a.IsZero() == e.IsZero()
		}
		at, aok := a.Interface().(Task)
		et, eok := e.Interface().(Task)
		if aok && eok {
			return at.Key() == et.Key()
		}
		return reflect.DeepEqual(a.Interface(), e.Interface())
	}
	switch a.Kind() {
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != e.IsNil() || a.Len() != e.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !valueEqual(a.Index(i), e.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != e.IsNil() || a.Len() != e.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			ev := e.MapIndex(it.Key())
			if !ev.IsValid() || !valueEqual(it.Value(), ev) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.IsNil() || e.IsNil() {
			return a.IsNil() == e.IsNil()
		}
		return valueEqual(a.Elem(), e.Elem())
	}
	return reflect.DeepEqual(a.Interface(), e.Interface())
}

// holdsTasks reports whether values of type t are, or directly contain (through slices, arrays, maps and
// pointers), references to tasks. Structs nested in a task are compared whole.
func holdsTasks(t reflect.Type) bool {
	for {
		if t.Implements(taskType) || t.Kind() == reflect.Interface {
			return true
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map, reflect.Pointer:
			t = t.Elem()
		default:
			return false
		}
	}
}

// setEqual compares two slices as multisets. Sets in tasks are small; quadratic matching keeps any element type
// comparable without hashing.
func setEqual(a, e reflect.Value) bool {
	if a.Len() != e.Len() {
		return false
	}
	used := make([]bool, a.Len())
	for i := 0; i < e.Len(); i++ {
		found := false
		for j := 0; j < a.Len(); j++ {
			if !used[j] && valueEqual(a.Index(j), e.Index(i)) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// tasksEqual reports whether two tasks with the same key describe the same desired state: the rule for a key
// that is added twice.
func tasksEqual(a, b Task) bool {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	if av.Type() != bv.Type() {
		return false
	}
	if a == b {
		return true
	}
	as, bs := structOf(a), structOf(b)
	for _, f := range typeInfoOf(as.Type()).fields {
		if f.output {
			continue
		}
		if !fieldEqual(f, as.Field(f.index), bs.Field(f.index)) {
			return false
		}
	}
	return true
}
