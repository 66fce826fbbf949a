package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// PathChange is one change inside a structured text (YAML or JSON), named by its field path:
// "spec.kubelet.maxPods", "instanceGroups[nodes].spec.maxSize", "spec.containers[etcd].command".
//
// Maps are walked key by key, in sorted order; a list whose items are all mappings with a distinct "name" (or, failing
// that, a distinct "path") is walked item by item by that name, in the new list's order then the removed items; a
// list of strings in which one starts with "-" is a flag list, diffed flag by flag (Removed, Added); any other list
// is walked by index. A multi-line string is diffed line by line (Lines).
type PathChange struct {
	Path string
	// Old and New are the values before and after (strings, json.Number, bools, nil for null, or a whole map or
	// list when the kind of value changed); Absent when the field is not there.
	Old, New any
	// Removed and Added are the flags a flag list lost and gained, in their order; Old and New are then unset.
	Removed, Added []string
	// Lines is the line diff of a multi-line string ("- ", "+ ", "  " and "  ..."); Old and New are then unset.
	Lines []string
}

// absentValue is the value of a field that is not there.
type absentValue struct{}

func (absentValue) String() string { return "<none>" }

// Absent is PathChange.Old of a field that is added, and New of one that is removed.
var Absent any = absentValue{}

// kind says what a PathChange holds.
func (c PathChange) kind() string {
	switch {
	case c.Lines != nil:
		return "lines"
	case c.Removed != nil || c.Added != nil:
		return "flags"
	}
	return "value"
}

// DiffStructured compares two YAML or JSON texts by field path. ok is false when either text is not YAML or JSON
// whose every document is a mapping (a text that is empty, a list, a scalar, or does not parse): such text is
// diffed by line. Comments and formatting are not compared: two texts that differ only there have no
// PathChange, and a caller shows their line diff.
//
// A text of several documents ("---") names each document by kind and metadata.name ("InstanceGroup[nodes].
// spec.maxSize") when every document has them, distinct, on both sides; otherwise by index ("[1].spec.maxSize").
func DiffStructured(oldText, newText string) (changes []PathChange, ok bool) {
	oldDocs, ok1 := parseDocs(oldText)
	newDocs, ok2 := parseDocs(newText)
	if !ok1 || !ok2 {
		return nil, false
	}
	w := &walker{}
	if len(oldDocs) == 1 && len(newDocs) == 1 {
		w.value("", oldDocs[0], newDocs[0])
		return w.out, true
	}
	oldNames, okOld := docNames(oldDocs)
	newNames, okNew := docNames(newDocs)
	if !okOld || !okNew {
		w.value("", toAny(oldDocs), toAny(newDocs)) // by index
		return w.out, true
	}
	w.named(oldDocs, newDocs, oldNames, newNames, func(name string) string { return name })
	return w.out, true
}

func toAny(docs []map[string]any) []any {
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return out
}

// parseDocs splits a text into YAML documents and decodes each; numbers stay as written (json.Number).
func parseDocs(text string) ([]map[string]any, bool) {
	if !mayBeMap(text) {
		return nil, false
	}
	var docs []map[string]any
	for _, doc := range splitDocs(text) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, false
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue // only comments or blank
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			return nil, false
		}
		docs = append(docs, m)
	}
	return docs, len(docs) > 0
}

// mayBeMap is false for a text that cannot be a YAML or JSON map, cheaply: its first line that is not blank, a
// comment or a document marker has no ':' (and no '?' of a complex key). Most files that are not YAML (units,
// scripts, flag files) fail it, so a plan need not parse them.
func mayBeMap(text string) bool {
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		l := strings.TrimSpace(line)
		if l == "" || l[0] == '#' || l[0] == '%' || l == "---" || l == "..." {
			continue
		}
		l = strings.TrimSpace(strings.TrimPrefix(l, "--- "))
		return strings.ContainsAny(l, ":?")
	}
	return true // only blanks and comments: parseDocs decides
}

func splitDocs(text string) []string {
	var docs []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if l := strings.TrimRight(line, " \t\r\n"); l == "---" || strings.HasPrefix(l, "--- ") {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}

// docNames names each document kind[metadata.name]; false unless every one has both and they are distinct.
func docNames(docs []map[string]any) ([]string, bool) {
	names := make([]string, len(docs))
	seen := map[string]bool{}
	for i, d := range docs {
		kind, _ := d["kind"].(string)
		meta, _ := d["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if kind == "" || name == "" {
			return nil, false
		}
		names[i] = kind + "[" + name + "]"
		if seen[names[i]] {
			return nil, false
		}
		seen[names[i]] = true
	}
	return names, true
}

type walker struct {
	out []PathChange
}

func (w *walker) add(c PathChange) { w.out = append(w.out, c) }

// value compares a with b at path; either may be Absent.
func (w *walker) value(path string, a, b any) {
	am, aMap := a.(map[string]any)
	bm, bMap := b.(map[string]any)
	al, aList := a.([]any)
	bl, bList := b.([]any)
	_, aAbsent := a.(absentValue)
	_, bAbsent := b.(absentValue)
	switch {
	case (aMap || aAbsent) && (bMap || bAbsent) && !(aAbsent && bAbsent) && (len(am) > 0 || len(bm) > 0):
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, dup := am[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.value(joinKey(path, k), get(am, k, aAbsent), get(bm, k, bAbsent))
		}
	case (aList || aAbsent) && (bList || bAbsent) && !(aAbsent && bAbsent) && (len(al) > 0 || len(bl) > 0):
		w.list(path, al, bl)
	case aMap && bMap, aList && bList: // both empty
	case isMultiline(a) || isMultiline(b):
		as, _ := a.(string)
		bs, _ := b.(string)
		if as != bs {
			w.add(PathChange{Path: path, Lines: lineDiff(as, bs)})
		}
	case !reflect.DeepEqual(a, b):
		w.add(PathChange{Path: path, Old: a, New: b})
	}
}

func get(m map[string]any, k string, absent bool) any {
	if absent {
		return Absent
	}
	v, ok := m[k]
	if !ok {
		return Absent
	}
	return v
}

func isMultiline(v any) bool {
	s, ok := v.(string)
	return ok && strings.Contains(strings.TrimSuffix(s, "\n"), "\n")
}

func (w *walker) list(path string, a, b []any) {
	if isFlagList(a, b) {
		removed, added := flagDiff(strs(a), strs(b))
		if len(removed) > 0 || len(added) > 0 {
			w.add(PathChange{Path: path, Removed: removed, Added: added})
		}
		return
	}
	if key := listKey(a, b); key != "" {
		aNames, bNames := itemNames(a, key), itemNames(b, key)
		w.named(maps(a), maps(b), aNames, bNames, func(name string) string { return path + "[" + name + "]" })
		return
	}
	for i := 0; i < max(len(a), len(b)); i++ {
		var av, bv any = Absent, Absent
		if i < len(a) {
			av = a[i]
		}
		if i < len(b) {
			bv = b[i]
		}
		w.value(fmt.Sprintf("%s[%d]", path, i), av, bv)
	}
}

// named compares items by name: those of b in b's order, then those only a has, in a's order; seg makes an
// item's path from its name.
func (w *walker) named(a, b []map[string]any, aNames, bNames []string, seg func(string) string) {
	inB := map[string]bool{}
	for i, n := range bNames {
		inB[n] = true
		var av any = Absent
		for j, m := range aNames {
			if m == n {
				av = a[j]
			}
		}
		w.value(seg(n), av, b[i])
	}
	for j, n := range aNames {
		if !inB[n] {
			w.value(seg(n), a[j], Absent)
		}
	}
}

func maps(l []any) []map[string]any {
	out := make([]map[string]any, len(l))
	for i, v := range l {
		out[i] = v.(map[string]any)
	}
	return out
}

// listKey is the field that names the items of both lists ("name", else "path"), or "" to walk them by index.
func listKey(a, b []any) string {
	for _, key := range []string{"name", "path"} {
		if itemNames(a, key) != nil && itemNames(b, key) != nil {
			return key
		}
	}
	return ""
}

// itemNames returns each item's string field key, or nil unless every item is a mapping with one, distinct. An
// empty list has names (none).
func itemNames(l []any, key string) []string {
	names := make([]string, 0, len(l))
	seen := map[string]bool{}
	for _, v := range l {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		n, ok := m[key].(string)
		if !ok || n == "" || seen[n] || strings.ContainsAny(n, "[]") {
			return nil
		}
		seen[n] = true
		names = append(names, n)
	}
	return names
}

// isFlagList reports whether two lists are command lines: all strings, at least one a flag ("-x", "--x").
func isFlagList(a, b []any) bool {
	flag := false
	for _, l := range [][]any{a, b} {
		for _, v := range l {
			s, ok := v.(string)
			if !ok {
				return false
			}
			flag = flag || strings.HasPrefix(s, "-")
		}
	}
	return flag
}

func strs(l []any) []string {
	out := make([]string, len(l))
	for i, v := range l {
		out[i] = v.(string)
	}
	return out
}

// flagDiff returns the flags only a has and those only b has, in their order: an edit script of fewest changes,
// so a flag that moved counts as removed and added.
func flagDiff(a, b []string) (removed, added []string) {
	for _, op := range diffLines(a, b) {
		switch op.kind {
		case '-':
			removed = append(removed, op.line)
		case '+':
			added = append(added, op.line)
		}
	}
	return removed, added
}

// joinKey appends a map key to a path: ".key", or `["key"]` for a key that holds ".", "[", "]", a space or a quote
// (labels such as kubernetes.io/role).
func joinKey(path, k string) string {
	if k == "" || strings.ContainsAny(k, ".[]\" ") {
		return path + "[" + strconvQuote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// formatPathValue prints a value of a PathChange for the text plan.
func formatPathValue(v any) string {
	switch v := v.(type) {
	case absentValue:
		return "<none>"
	case nil:
		return "null"
	case string:
		if v == "" {
			return `""`
		}
		return v
	case json.Number:
		return v.String()
	case bool:
		return fmt.Sprint(v)
	}
	b, err := json.Marshal(v) // a whole map or list: compact, keys sorted
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// textLines renders a PathChange for the text plan, each line without indentation.
func (c PathChange) textLines() []string {
	switch c.kind() {
	case "lines":
		return append([]string{c.Path + ":"}, indent(c.Lines, "  ")...)
	case "flags":
		out := []string{c.Path + ":"}
		for _, f := range c.Removed {
			out = append(out, "  - "+f)
		}
		for _, f := range c.Added {
			out = append(out, "  + "+f)
		}
		return out
	}
	return []string{c.Path + ": " + formatPathValue(c.Old) + " -> " + formatPathValue(c.New)}
}

func indent(lines []string, prefix string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}
