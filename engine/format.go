package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"
)

var (
	secretType   = reflect.TypeFor[Secret]()
	stringerType = reflect.TypeFor[fmt.Stringer]()
	marshalType  = reflect.TypeFor[json.Marshaler]()
)

// formatValue prints a field's value for the report: pointers followed, tasks as their key, secrets redacted,
// maps with sorted keys.
func formatValue(v any) string {
	var b strings.Builder
	writeValue(&b, reflect.ValueOf(v))
	return b.String()
}

func writeValue(b *strings.Builder, v reflect.Value) {
	if !v.IsValid() {
		b.WriteString("<none>")
		return
	}
	switch t := v.Type(); {
	case t == secretType:
		b.WriteString(Redacted)
		return
	case (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil():
		b.WriteString("<none>")
		return
	case t.Implements(taskType):
		b.WriteString(v.Interface().(Task).Key().String())
		return
	case t.Implements(stringerType) && v.Kind() != reflect.Pointer:
		b.WriteString(v.Interface().(fmt.Stringer).String())
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		writeValue(b, v.Elem())
	case reflect.String:
		if v.Len() == 0 {
			b.WriteString(`""`)
		} else {
			b.WriteString(v.String())
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 && v.Kind() == reflect.Slice {
			writeBytes(b, v.Bytes())
			return
		}
		b.WriteString("[")
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, v.Index(i))
		}
		b.WriteString("]")
	case reflect.Map:
		type kv struct{ k, v string }
		entries := make([]kv, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			entries = append(entries, kv{formatValue(it.Key().Interface()), formatValue(it.Value().Interface())})
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].k < entries[j].k })
		b.WriteString("{")
		for i, e := range entries {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e.k + ": " + e.v)
		}
		b.WriteString("}")
	case reflect.Struct:
		b.WriteString("{")
		first := true
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(v.Type().Field(i).Name + ": ")
			writeValue(b, v.Field(i))
		}
		b.WriteString("}")
	default:
		fmt.Fprint(b, v.Interface())
	}
}

func writeBytes(b *strings.Builder, p []byte) {
	if utf8.Valid(p) {
		b.Write(p)
		return
	}
	fmt.Fprintf(b, "<%d bytes of binary data>", len(p))
}

// textOf returns a string or byte-slice value as text, and whether it has several lines (and so is shown as a
// line diff).
func textOf(v any) (string, bool) {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.Type() == secretType {
		return "", false
	}
	var s string
	switch {
	case rv.Kind() == reflect.String:
		s = rv.String()
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 && utf8.Valid(rv.Bytes()):
		s = string(rv.Bytes())
	default:
		return "", false
	}
	return s, strings.Contains(s, "\n")
}

// jsonValue turns a field's value into plain JSON data: tasks as their key, secrets redacted at any depth.
func jsonValue(v any) any {
	return toJSON(reflect.ValueOf(v))
}

func toJSON(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	t := v.Type()
	switch {
	case t == secretType:
		return Redacted
	case (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface || v.Kind() == reflect.Map ||
		v.Kind() == reflect.Slice) && v.IsNil():
		return nil
	case t.Implements(taskType):
		return v.Interface().(Task).Key().String()
	case t.Implements(marshalType):
		return v.Interface()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return toJSON(v.Elem())
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return formatValue(v.Interface()) // JSON has no NaN or infinity: "NaN", "+Inf", "-Inf" as in the text plan
		}
	case reflect.Complex64, reflect.Complex128, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return formatValue(v.Interface()) // no JSON form: as the text plan shows it
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && v.Kind() == reflect.Slice {
			if utf8.Valid(v.Bytes()) {
				return string(v.Bytes())
			}
			return v.Bytes() // base64, as encoding/json writes bytes
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = toJSON(v.Index(i))
		}
		return out
	case reflect.Map:
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			out[formatValue(it.Key().Interface())] = toJSON(it.Value())
		}
		return out
	case reflect.Struct:
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).IsExported() {
				out[t.Field(i).Name] = toJSON(v.Field(i))
			}
		}
		return out
	}
	return v.Interface()
}
