package fakegce

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// decodeLenient decodes data into v. The API's int64 and uint64 fields are JSON strings ("sizeGb": "10"), as
// google.golang.org/api and Google's other clients write them; GCE takes numbers too, so numbers found where v's
// type has a ",string" field are made strings first.
func decodeLenient(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	raw = quoteNumbers(raw, reflect.TypeOf(v))
	fixed, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(fixed, v)
}

// quoteNumbers makes strings of the numbers of raw that t decodes with a ",string" tag.
func quoteNumbers(raw any, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch v := raw.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for k, e := range v {
				v[k] = quoteNumbers(e, t.Elem())
			}
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				tag := f.Tag.Get("json")
				name, opts, _ := strings.Cut(tag, ",")
				if name == "" || name == "-" {
					continue
				}
				e, ok := v[name]
				if !ok {
					continue
				}
				if n, isNum := e.(json.Number); isNum && strings.Contains(","+opts+",", ",string,") {
					v[name] = n.String()
					continue
				}
				v[name] = quoteNumbers(e, f.Type)
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range v {
				v[i] = quoteNumbers(e, t.Elem())
			}
		}
	}
	return raw
}

// toMap is v's JSON as a map (for filters and patches).
func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.Decode(&m)
	return m
}

// patchJSON overlays the fields of patch (a JSON object) on v: a field present in patch replaces v's (null removes
// it), as GCE's PATCH of a resource does at its top level.
func patchJSON(v any, patch []byte) error {
	m := toMap(v)
	var p map[string]json.RawMessage
	if err := json.Unmarshal(patch, &p); err != nil {
		return err
	}
	for k, raw := range p {
		if string(raw) == "null" {
			delete(m, k)
			continue
		}
		m[k] = raw
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return decodeLenient(b, v)
}
