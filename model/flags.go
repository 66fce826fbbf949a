package model

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Flags turns a component configuration (a pointer to one of the *Config structs, or an EtcdClusterSpec) into
// the component's command-line flags, sorted by name: `--name=value`. Each field with a `flag:"name"` tag is one
// flag. Nil pointers, empty strings, empty lists and empty maps are left out, so that the component's own default
// applies. Lists are joined with commas, maps become sorted key=value pairs joined with commas.
//
// A field of a kind this function does not know is a programmer error: it panics.
func Flags(config any) []string {
	v := reflect.ValueOf(config)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		panic(fmt.Sprintf("model.Flags: %T is not a struct", config))
	}
	t := v.Type()
	type flag struct{ name, value string }
	var set []flag
	for i := range t.NumField() {
		name, ok := t.Field(i).Tag.Lookup("flag")
		if !ok || name == "-" {
			continue
		}
		if value, ok := flagValue(v.Field(i)); ok {
			set = append(set, flag{name, value})
		}
	}
	slices.SortFunc(set, func(a, b flag) int { return strings.Compare(a.name, b.name) })
	flags := make([]string, len(set))
	for i, f := range set {
		flags[i] = "--" + f.name + "=" + f.value
	}
	return flags
}

// flagValue renders one field; set is false when the field is left out.
func flagValue(f reflect.Value) (value string, set bool) {
	switch f.Kind() {
	case reflect.Pointer:
		if f.IsNil() {
			return "", false
		}
		return flagValue(f.Elem())
	case reflect.String:
		return f.String(), f.String() != ""
	case reflect.Bool:
		return strconv.FormatBool(f.Bool()), true
	case reflect.Int, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10), true
	case reflect.Slice:
		if f.Len() == 0 {
			return "", false
		}
		parts := make([]string, f.Len())
		for i := range f.Len() {
			parts[i], _ = flagValue(f.Index(i))
		}
		return strings.Join(parts, ","), true
	case reflect.Map:
		if f.Len() == 0 {
			return "", false
		}
		type pair struct{ k, v string }
		pairs := make([]pair, 0, f.Len())
		iter := f.MapRange()
		for iter.Next() {
			k, _ := flagValue(iter.Key())
			val, _ := flagValue(iter.Value())
			pairs = append(pairs, pair{k, val})
		}
		slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
		parts := make([]string, len(pairs))
		for i, p := range pairs {
			parts[i] = p.k + "=" + p.v
		}
		return strings.Join(parts, ","), true
	}
	panic(fmt.Sprintf("model.Flags: field of kind %s has no flag form", f.Kind()))
}
