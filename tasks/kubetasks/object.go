package kubetasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
)

// Object is an object kubeup keeps in the cluster: the fields it manages, applied by server-side apply as the
// client's field manager. Find GETs the object and keeps, of what the API returns, only the fields the manifest
// names (the server's own fields, defaults and other managers' fields are no change); Render PATCHes the manifest
// (application/apply-patch+yaml, force), which also drops a field kubeup applied before and no longer names.
//
// An object that holds secrets (a Secret) sets SecretManifest instead of Manifest: plans show it as (sensitive).
type Object[C World] struct {
	// Name is the object as plans show it: Kind/name, or Kind/namespace/name.
	Name string
	// Path is the object's API path (/apis/rbac.authorization.k8s.io/v1/clusterroles/NAME).
	Path string `kubeup:"-"`
	// Manifest is the fields kubeup manages, as YAML (apiVersion, kind, metadata.name and what it sets).
	Manifest *string
	// SecretManifest is Manifest for an object that holds secrets.
	SecretManifest *engine.Secret
	// Mark, when set, is the label (key=value) every object kubeup made for this task carries, and the manifest
	// sets: an object at Path without it is someone else's, which kubeup does not take over (Find refuses, and
	// nothing is applied).
	Mark string `kubeup:"-"`
	// After lists tasks to run first.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*Object[World], World] = (*Object[World])(nil)
	_ engine.Renderer[*Object[World], World] = (*Object[World])(nil)
	_ engine.Validator                       = (*Object[World])(nil)
)

// ErrNotKubeups is the refusal of an Object with a Mark to apply over an object without that label.
var ErrNotKubeups = errors.New("kubeup does not take over an object it did not make")

// ObjectKeyType is the type of an Object's key.
const ObjectKeyType = "KubeObject"

func (o *Object[C]) Key() engine.Key     { return engine.Key{Type: ObjectKeyType, Name: o.Name} }
func (o *Object[C]) Deps() []engine.Task { return o.After }

// NewObject returns the task of the object manifest describes (apiVersion, kind, metadata.name, and
// metadata.namespace for a namespaced one) at the API path of its resource (the kind's plural, lower case:
// "clusterrolebindings"). secret keeps the manifest out of plans.
func NewObject[C World](manifest map[string]any, resource string, secret bool) (*Object[C], error) {
	apiVersion, _ := manifest["apiVersion"].(string)
	kind, _ := manifest["kind"].(string)
	meta, _ := manifest["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if apiVersion == "" || kind == "" || name == "" || resource == "" {
		return nil, fmt.Errorf("kubernetes object %s/%s: apiVersion, kind, metadata.name and its resource are required", kind, name)
	}
	shown := kind + "/" + name
	if ns != "" {
		shown = kind + "/" + ns + "/" + name
	}
	path := CollectionPath(apiVersion, ns, resource) + "/" + name
	text, err := canonical(manifest)
	if err != nil {
		return nil, fmt.Errorf("kubernetes object %s: %w", shown, err)
	}
	o := &Object[C]{Name: shown, Path: path}
	if secret {
		o.SecretManifest = ptr(engine.NewSecret(text))
	} else {
		o.Manifest = &text
	}
	return o, nil
}

// CollectionPath is the API path of a collection: the objects of resource (the kind's plural, lower case) of
// apiVersion, in namespace ns ("" for a kind that has none): /apis/apps/v1/namespaces/kube-system/deployments.
func CollectionPath(apiVersion, ns, resource string) string {
	path := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") {
		path = "/api/" + apiVersion // the core group
	}
	if ns != "" {
		path += "/namespaces/" + ns
	}
	return path + "/" + resource
}

func ptr[T any](v T) *T { return &v }

// canonical is v as YAML with sorted keys, through JSON (so that 1 and 1.0 are one number).
func canonical(v any) (string, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var norm any
	if err := json.Unmarshal(js, &norm); err != nil {
		return "", err
	}
	b, err := yaml.Marshal(norm)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Validate checks that exactly one of Manifest and SecretManifest is set, and that it decodes.
func (o *Object[C]) Validate() error {
	if (o.Manifest == nil) == (o.SecretManifest == nil) {
		return fmt.Errorf("kubernetes object %s: exactly one of Manifest and SecretManifest is required", o.Name)
	}
	if _, err := o.want(); err != nil {
		return err
	}
	if !strings.HasPrefix(o.Path, "/api/") && !strings.HasPrefix(o.Path, "/apis/") {
		return fmt.Errorf("kubernetes object %s: path %q is not an API path", o.Name, o.Path)
	}
	return nil
}

// want is the manifest, decoded.
func (o *Object[C]) want() (map[string]any, error) {
	text := ""
	if o.Manifest != nil {
		text = *o.Manifest
	} else if o.SecretManifest != nil {
		text = o.SecretManifest.Reveal()
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		return nil, fmt.Errorf("kubernetes object %s: its manifest does not decode (never shown: it may hold a secret)", o.Name)
	}
	return m, nil
}

// Find GETs the object and keeps the fields the manifest names; nil when there is none.
func (o *Object[C]) Find(ctx context.Context, world C) (*Object[C], error) {
	want, err := o.want()
	if err != nil {
		return nil, err
	}
	var live map[string]any
	if err := world.KubeAPI().Get(ctx, o.Path, &live); err != nil {
		if IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if k, v, _ := strings.Cut(o.Mark, "="); o.Mark != "" {
		if labels, _ := dig(live, "metadata", "labels").(map[string]any); labels[k] != v {
			return nil, engine.Terminal(fmt.Errorf("%s exists and is not kubeup's (it has no label %s): %w; delete it to let kubeup make its own",
				o.Name, o.Mark, ErrNotKubeups))
		}
	}
	text, err := canonical(Project(want, owned(live, world.KubeAPI().FieldManager), live))
	if err != nil {
		return nil, err
	}
	actual := &Object[C]{Name: o.Name, Path: o.Path, After: o.After}
	if o.SecretManifest != nil {
		actual.SecretManifest = ptr(engine.NewSecret(text))
	} else {
		actual.Manifest = &text
	}
	return actual, nil
}

// owned is the fields the object's managedFields say manager applied (its fieldsV1 of operation Apply): a
// field kubeup applied and no longer names is kubeup's to remove, so it must show as a difference.
func owned(live map[string]any, manager string) map[string]any {
	meta, _ := live["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if m["manager"] == manager && m["operation"] == "Apply" {
			f, _ := m["fieldsV1"].(map[string]any)
			return f
		}
	}
	return nil
}

// Project returns of live only what want names, or what owned (fieldsV1: "f:<field>" keys, nested) says the
// field manager applied: of a mapping, those keys (each projected in turn; one only owned is kept whole); of a
// list, every element of live, each projected by want's element at its index (an element want does not have is
// kept whole: it is a difference); anything else, live's value. A field want has and live lacks is left out: it
// shows as a difference. The server's own fields (uid, resourceVersion, managedFields), its defaults and other
// managers' fields are left out: they are no change of kubeup's.
func Project(want any, owned map[string]any, live any) any {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live
		}
		out := map[string]any{}
		for k, wv := range w {
			if lv, ok := l[k]; ok {
				sub, _ := owned["f:"+k].(map[string]any)
				out[k] = Project(wv, sub, lv)
			}
		}
		for fk := range owned {
			k, ok := strings.CutPrefix(fk, "f:")
			if _, wanted := w[k]; !ok || wanted {
				continue
			}
			if lv, ok := l[k]; ok {
				out[k] = lv
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok {
			return live
		}
		out := make([]any, len(l))
		for i, lv := range l {
			if i < len(w) {
				out[i] = Project(w[i], nil, lv)
			} else {
				out[i] = lv
			}
		}
		return out
	}
	return live
}

func (o *Object[C]) CheckChanges(actual, expected, changes *Object[C]) error { return nil }

// Render applies the manifest.
func (o *Object[C]) Render(ctx context.Context, world C, actual, expected, changes *Object[C]) error {
	var body string
	if expected.Manifest != nil {
		body = *expected.Manifest
	} else {
		body = expected.SecretManifest.Reveal()
	}
	if err := world.KubeAPI().Apply(ctx, expected.Path, []byte(body), nil); err != nil {
		return fmt.Errorf("applying %s: %w", expected.Name, err)
	}
	return nil
}
