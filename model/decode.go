package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Objects is what a spec file holds: at most one Cluster and any number of InstanceGroups, as YAML documents
// separated by "---".
type Objects struct {
	Cluster        *Cluster
	InstanceGroups []*InstanceGroup
}

// ClusterName is the cluster the documents are for: the Cluster's metadata.name, else the cluster the
// InstanceGroups name with metadata.labels[LabelCluster]; "" when no document says. Decode refuses documents
// that name different clusters.
func (o *Objects) ClusterName() string {
	if o.Cluster != nil {
		return o.Cluster.Metadata.Name
	}
	for _, ig := range o.InstanceGroups {
		if v := ig.Metadata.Labels[LabelCluster]; v != "" {
			return v
		}
	}
	return ""
}

// docSeparator is a "---" line, with or without a comment, ending in "\n" or "\r\n".
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#[^\r\n]*)?\r?$`)

// MaxSpecBytes is the largest spec kubeup reads: 1 MiB. A cluster's spec, with its instance groups, is a few
// KiB; a larger input is refused before it is parsed (a 57 MB one took minutes and gigabytes to parse).
const MaxSpecBytes = 1 << 20

// errTooLarge is the message of an input over MaxSpecBytes; size is how much it holds, as far as known.
func errTooLarge(source, size string) error {
	return fmt.Errorf("%s: %s the limit of %d bytes (1 MiB) for a spec: a cluster's spec is a few KiB, is it the right file?",
		source, size, MaxSpecBytes)
}

// ReadSpec reads a spec from r, which source names in messages ("cluster.yaml", "-" for stdin): at most
// MaxSpecBytes+1 bytes are read, and an input over MaxSpecBytes is refused with its size when r is a file whose
// size is known.
func ReadSpec(source string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	if len(data) <= MaxSpecBytes {
		return data, nil
	}
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return nil, errTooLarge(source, sizeOf(fi.Size())+" is over")
		}
	}
	return nil, fmt.Errorf("%s: more than %d bytes (1 MiB), the limit for a spec: a cluster's spec is a few KiB, is it the right file?",
		source, MaxSpecBytes)
}

// sizeOf is a size in bytes, and in MiB when that says more.
func sizeOf(n int64) string {
	if n >= 2*MaxSpecBytes {
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// newerKubeup is the hint for a field, kind or apiVersion kubeup does not know: a spec written by a newer
// kubeup holds them.
const newerKubeup = "written by a newer kubeup? upgrade kubeup"

// Decode reads the YAML documents of file strictly: an unknown or misspelt field, a value of the wrong type, an
// unknown kind or apiVersion is a problem naming the field's path (and, when it is not a likely typo, saying that
// a newer kubeup may have written it). Every problem in the file is reported at once, in an *InvalidError whose
// Source is file. Malformed YAML is an error naming the file and the line. Data over MaxSpecBytes is refused
// before it is parsed.
func Decode(file string, data []byte) (*Objects, error) {
	if len(data) > MaxSpecBytes {
		return nil, errTooLarge(file, sizeOf(int64(len(data)))+" is over")
	}
	docs := splitDocuments(data)
	objs := &Objects{}
	var ps problems
	var igWhere []string // where each of objs.InstanceGroups is
	for i, doc := range docs {
		where := ""
		if len(docs) > 1 {
			where = fmt.Sprintf("document %d (line %d)", i+1, doc.line)
		}
		found, err := decodeDocument(doc, where, &ps)
		if err != nil {
			if where != "" {
				return nil, fmt.Errorf("%s: %s: %w", file, where, err)
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, f := range found {
			switch o := f.obj.(type) {
			case *Cluster:
				if objs.Cluster != nil {
					ps.add(prefix(f.where, "kind"), "a file holds at most one Cluster; this is the second")
					continue
				}
				objs.Cluster = o
			case *InstanceGroup:
				objs.InstanceGroups = append(objs.InstanceGroups, o)
				igWhere = append(igWhere, f.where)
			}
		}
	}
	checkClusterOfDocuments(objs, igWhere, &ps)
	checkDuplicateGroups(objs, igWhere, &ps)
	if err := ps.err(file); err != nil {
		return nil, err
	}
	if objs.Cluster == nil && len(objs.InstanceGroups) == 0 {
		return nil, fmt.Errorf("%s: no Cluster or InstanceGroup in the file", file)
	}
	return objs, nil
}

// checkClusterOfDocuments adds a problem for each InstanceGroup of objs whose LabelCluster is empty, or names
// another cluster than the file's Cluster or its first labelled group (see Objects.ClusterName).
func checkClusterOfDocuments(objs *Objects, igWhere []string, ps *problems) {
	name, from := "", ""
	if objs.Cluster != nil {
		name, from = objs.Cluster.Metadata.Name, "the file's Cluster"
	}
	for i, ig := range objs.InstanceGroups {
		v, ok := ig.Metadata.Labels[LabelCluster]
		switch {
		case !ok:
		case v == "":
			ps.add(prefix(igWhere[i], "metadata.labels["+LabelCluster+"]"), "empty: name the group's cluster (for example demo.example.com), or leave the label out")
		case name == "":
			name, from = v, "InstanceGroup "+strconv.Quote(ig.Metadata.Name)
		case v != name:
			ps.add(prefix(igWhere[i], "metadata.labels["+LabelCluster+"]"), "%q is not %q, the cluster of %s: a file holds one cluster's documents; "+
				"put the groups of cluster %q in a file of their own", v, name, from, v)
		}
	}
}

// checkDuplicateGroups adds a problem for each InstanceGroup of objs whose name an earlier document gives, naming
// both documents.
func checkDuplicateGroups(objs *Objects, igWhere []string, ps *problems) {
	first := map[string]int{}
	for i, ig := range objs.InstanceGroups {
		name := ig.Metadata.Name
		if name == "" {
			continue
		}
		if j, ok := first[name]; ok {
			ps.add(prefix(igWhere[i], "metadata.name"), "instance group %q is also %s: a file gives each instance group once; remove or rename one",
				name, igWhere[j])
			continue
		}
		first[name] = i
	}
}

type document struct {
	text []byte
	line int
}

// splitDocuments splits a YAML stream at its "---" lines, dropping documents that hold only comments.
func splitDocuments(data []byte) []document {
	var docs []document
	start, line := 0, 1
	add := func(end int) {
		text := data[start:end]
		if !blankYAML(text) {
			docs = append(docs, document{text: text, line: line})
		}
	}
	for _, loc := range docSeparator.FindAllIndex(data, -1) {
		add(loc[0])
		line += bytes.Count(data[start:loc[1]], []byte("\n")) + 1
		start = loc[1]
		if start < len(data) && data[start] == '\n' {
			start++
		}
	}
	add(len(data))
	return docs
}

func blankYAML(text []byte) bool {
	for _, l := range strings.Split(string(text), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func prefix(where, path string) string {
	switch {
	case where == "":
		return path
	case path == "":
		return where
	}
	return where + ": " + path
}

// decoded is an object of a document, and where it is.
type decoded struct {
	obj   any // *Cluster or *InstanceGroup
	where string
}

// KindList is the kind of a document that holds other objects in its items, as kubectl prints several objects
// (apiVersion v1, kind List). Decode reads its items, as it reads a document that is a list of objects (what
// `kubeup get -o json` prints for several).
const KindList = "List"

// decodeDocument decodes one document into *Cluster and *InstanceGroup objects: one, or the items of a List (or
// of a list). Problems with fields go to ps (the object is then left out); an error is returned only for YAML
// that does not parse, or that sets a key twice.
func decodeDocument(doc document, where string, ps *problems) ([]decoded, error) {
	js, err := yaml.YAMLToJSONStrict(doc.text)
	if err != nil {
		return nil, fmt.Errorf("malformed YAML: %w", yamlError(err, doc.line))
	}
	var raw any
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("malformed YAML: %w", err)
	}
	items, itemsPath := listItems(raw, where, ps)
	if items == nil {
		obj := decodeObject(raw, js, where, ps)
		if obj == nil {
			return nil, nil
		}
		return []decoded{{obj, where}}, nil
	}
	var out []decoded
	for i, item := range items {
		w := prefix(where, Index(itemsPath, i))
		if m, ok := item.(map[string]any); ok && m["kind"] == KindList {
			ps.add(prefix(w, "kind"), "a List inside a List: give its items in the outer one")
			continue
		}
		js, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		if obj := decodeObject(item, js, w, ps); obj != nil {
			out = append(out, decoded{obj, w})
		}
	}
	return out, nil
}

// listItems returns the objects of raw when it is a list of them, or a List (its items), and the path of
// those items ("items", or "" for a bare list); else nil. A List's problems go to ps, and give no items.
func listItems(raw any, where string, ps *problems) ([]any, string) {
	if a, ok := raw.([]any); ok {
		if a == nil {
			a = []any{}
		}
		return a, ""
	}
	top, ok := raw.(map[string]any)
	if !ok || top["kind"] != KindList {
		return nil, ""
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		switch k {
		case "kind", "metadata", "items":
		case "apiVersion":
			if top[k] != "v1" {
				ps.add(prefix(where, "apiVersion"), "%s is not the apiVersion of a List: want v1", jsonKind(top[k]))
			}
		default:
			ps.add(prefix(where, k), "unknown field of a List: it holds apiVersion, kind and items")
		}
	}
	items, ok := top["items"].([]any)
	if !ok && top["items"] != nil {
		ps.add(prefix(where, "items"), "must be a list of Cluster and InstanceGroup objects, not %s", jsonKind(top["items"]))
	}
	if items == nil {
		items = []any{}
	}
	return items, "items"
}

// decodeObject decodes one object, raw as parsed from js, into a *Cluster or an *InstanceGroup; nil when it has
// problems, which go to ps.
func decodeObject(raw any, js []byte, where string, ps *problems) any {
	top, ok := raw.(map[string]any)
	if !ok {
		ps.add(prefix(where, ""), "a document must be a mapping with apiVersion, kind, metadata and spec, not %s", jsonKind(raw))
		return nil
	}
	kind, isString := top["kind"].(string)
	if top["kind"] != nil && !isString {
		ps.add(prefix(where, "kind"), "must be Cluster or InstanceGroup, not %s", jsonKind(top["kind"]))
		return nil
	}
	var obj any
	switch kind {
	case KindCluster:
		obj = &Cluster{}
	case KindInstanceGroup:
		obj = &InstanceGroup{}
	case "":
		ps.add(prefix(where, "kind"), "required: Cluster or InstanceGroup")
		return nil
	default:
		hint := ""
		if editDistance(kind, KindCluster) >= 3 && editDistance(kind, KindInstanceGroup) >= 3 {
			hint = " (" + newerKubeup + ")"
		}
		ps.add(prefix(where, "kind"), "%q is not a kind kubeup knows: want Cluster or InstanceGroup%s", kind, hint)
		return nil
	}
	before := len(ps.list)
	if v, _ := top["apiVersion"].(string); v != APIVersion {
		if v == "" {
			ps.add(prefix(where, "apiVersion"), "required: %s", APIVersion)
		} else {
			hint := ""
			if group, _, _ := strings.Cut(APIVersion, "/"); strings.HasPrefix(v, group+"/") {
				hint = " (" + newerKubeup + ")"
			}
			ps.add(prefix(where, "apiVersion"), "%q is not supported: want %s%s", v, APIVersion, hint)
		}
	}
	checkShape(where, "", raw, reflect.TypeOf(obj).Elem(), ps)
	if len(ps.list) > before {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		// checkShape should have caught it; report what encoding/json says rather than nothing.
		ps.add(prefix(where, ""), "%v", err)
		return nil
	}
	return obj
}

var yamlLine = regexp.MustCompile(`\bline (\d+)`)

// yamlError drops the wrappers that sigs.k8s.io/yaml and the parser put around the parser's message, puts its
// problems on one line, and turns its line numbers, counted from the document's first line, into the file's.
func yamlError(err error, firstLine int) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+firstLine-1)
	})
	return errors.New(msg)
}

// checkShape walks a decoded JSON value alongside the Go type it must fit, reporting every unknown field and
// every value of the wrong type with its path. It reads json tags: the field names of the API.
func checkShape(where, path string, v any, t reflect.Type, ps *problems) {
	if v == nil {
		return // null: left out
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			ps.add(prefix(where, path), "must be a mapping, not %s", jsonKind(v))
			return
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			f, ok := fields[k]
			if !ok {
				ps.add(prefix(where, join(path, k)), "unknown field%s", suggest(k, fields))
				continue
			}
			checkShape(where, join(path, k), m[k], f.Type, ps)
		}
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			ps.add(prefix(where, path), "must be a list, not %s", jsonKind(v))
			return
		}
		for i, e := range a {
			checkShape(where, Index(path, i), e, t.Elem(), ps)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			ps.add(prefix(where, path), "must be a mapping, not %s", jsonKind(v))
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			checkShape(where, path+"["+k+"]", m[k], t.Elem(), ps)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			ps.add(prefix(where, path), "must be a string, not %s (quote it)", jsonKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			ps.add(prefix(where, path), "must be true or false, not %s", jsonKind(v))
		}
	case reflect.Int32, reflect.Int64, reflect.Int:
		f, ok := v.(float64)
		if !ok {
			ps.add(prefix(where, path), "must be a whole number, not %s", jsonKind(v))
			return
		}
		lo, hi := float64(math.MinInt64), float64(1<<63) // [lo, hi)
		if t.Kind() == reflect.Int32 {
			lo, hi = math.MinInt32, math.MaxInt32+1
		}
		if f != math.Trunc(f) || f < lo || f >= hi {
			ps.add(prefix(where, path), "must be a whole number that fits in %s, not %v", t.Kind(), f)
		}
	default:
		panic(fmt.Sprintf("model: checkShape does not know %s", t))
	}
}

// jsonFields maps a struct's JSON field names to its fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		fields[name] = f
	}
	return fields
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

// suggest returns `: did you mean "x"?` for the known field closest to name, or a list of the known fields.
func suggest(name string, fields map[string]reflect.StructField) string {
	known := make([]string, 0, len(fields))
	for k := range fields {
		known = append(known, k)
	}
	slices.Sort(known)
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf(`: did you mean %q?`, k)
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(`: did you mean %q?`, best)
	}
	return " (" + newerKubeup + "): known fields are " + strings.Join(known, ", ")
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Encode writes objects as YAML documents separated by "---": the cluster first, then the instance groups.
func Encode(objs ...any) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", o, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// Applied is what a change of a cluster's spec is checked against of the complete spec it was last applied with
// (AppliedOf): what cannot change on a running cluster.
type Applied struct {
	// EtcdClusters are the etcd clusters and their members.
	EtcdClusters []EtcdClusterSpec
	// PodNetwork is spec.networking.podNetwork: kubenet when the spec has none (written before the field was).
	PodNetwork string
}

// AppliedOf reads what Applied holds of the Cluster in data, leniently: data is a complete spec kubeup stored
// (model.CompletedSpecPath), perhaps by another kubeup version, whose other fields and apiVersion this one may not
// know; only spec.etcdClusters and spec.networking.podNetwork are read. file names data in errors.
func AppliedOf(file string, data []byte) (*Applied, error) {
	for _, doc := range splitDocuments(data) {
		var c struct {
			Kind string `json:"kind"`
			Spec struct {
				EtcdClusters []EtcdClusterSpec `json:"etcdClusters"`
				Networking   struct {
					PodNetwork string `json:"podNetwork"`
				} `json:"networking"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc.text, &c); err != nil {
			return nil, fmt.Errorf("%s: malformed YAML: %w", file, yamlError(err, doc.line))
		}
		if c.Kind == KindCluster {
			a := &Applied{EtcdClusters: c.Spec.EtcdClusters, PodNetwork: c.Spec.Networking.PodNetwork}
			if a.PodNetwork == "" {
				a.PodNetwork = PodNetworkKubenet
			}
			return a, nil
		}
	}
	return nil, fmt.Errorf("%s: it holds no Cluster", file)
}
