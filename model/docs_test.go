package model

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const specDoc = "../docs/cluster-spec.md"

// yamlBlocks returns the ```yaml blocks of a Markdown file.
func yamlBlocks(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllString(string(data), -1)
}

// TestSpecDocExample checks that the example of docs/cluster-spec.md is a valid spec, and that each line of its
// excerpt of the complete spec is in the complete spec.
func TestSpecDocExample(t *testing.T) {
	blocks := yamlBlocks(t, specDoc)
	if len(blocks) < 2 {
		t.Fatalf("%s: want the example and the excerpt of its complete spec, found %d yaml blocks", specDoc, len(blocks))
	}
	example := strings.TrimSuffix(strings.TrimPrefix(blocks[0], "```yaml\n"), "```")
	objs, err := Decode(specDoc, []byte(example))
	if err != nil {
		t.Fatalf("the example does not decode: %v", err)
	}
	objs.Cluster.Spec.ConfigBase = "file:///tmp/s/" + objs.Cluster.Metadata.Name
	c, igs := Complete(objs.Cluster, objs.InstanceGroups)
	if err := Validate(specDoc, c, igs); err != nil {
		t.Fatalf("the example is not valid: %v", err)
	}
	full := string(encodeSpec(t, c, nil))
	excerpt := strings.TrimSuffix(strings.TrimPrefix(blocks[1], "```yaml\n"), "```")
	for _, line := range strings.Split(excerpt, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if !strings.Contains(full, "\n"+line+"\n") {
			t.Errorf("the excerpt's line %q is not in the complete spec:\n%s", line, full)
		}
	}
}

// TestSpecDocFields checks that docs/cluster-spec.md names every field of Cluster and InstanceGroup by its path.
func TestSpecDocFields(t *testing.T) {
	data, err := os.ReadFile(specDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, typ := range []reflect.Type{reflect.TypeFor[Cluster](), reflect.TypeFor[InstanceGroup]()} {
		for _, path := range fieldPaths("", typ) {
			if !strings.Contains(doc, "`"+path+"`") {
				t.Errorf("%s does not describe %s field `%s`", specDoc, typ.Name(), path)
			}
		}
	}
}

// fieldPaths lists the JSON paths of a type's fields, sorted, lists' elements written as [].
func fieldPaths(prefix string, t reflect.Type) []string {
	deref := func(t reflect.Type) reflect.Type {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return t
	}
	var paths []string
	for name, f := range jsonFields(deref(t)) {
		path := join(prefix, name)
		ft := deref(f.Type)
		list := ft.Kind() == reflect.Slice
		if list {
			ft = deref(ft.Elem())
		}
		switch {
		case ft.Kind() == reflect.Struct && list: // the list, and its elements' fields
			paths = append(paths, path)
			paths = append(paths, fieldPaths(path+"[]", ft)...)
		case ft.Kind() == reflect.Struct:
			paths = append(paths, fieldPaths(path, ft)...)
		default:
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	return paths
}
