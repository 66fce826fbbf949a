package kubetasks_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/kubetasks/kubetest"
)

type world struct{ c *kubetasks.Client }

func (w *world) KubeAPI() *kubetasks.Client { return w.c }

func binding(group string) map[string]any {
	return map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "kubeup:kubelet-bootstrap"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
		"subjects": []any{map[string]any{"kind": "Group", "name": group}},
	}
}

const sentinel = "SENTINEL-TOKEN-SECRET-93ac1f"

func secret() map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
		"metadata":   map[string]any{"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
		"stringData": map[string]any{"token-id": "abcdef", "token-secret": sentinel},
	}
}

func run(t *testing.T, w *world, target engine.Target, objs ...*kubetasks.Object[*world]) (*engine.Plan, string) {
	t.Helper()
	g := engine.NewGraph[*world]()
	for _, o := range objs {
		engine.Add(g, o)
	}
	res, err := engine.Run(context.Background(), g, w, engine.Options{Target: target})
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	var text, js bytes.Buffer
	if err := res.Plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := res.Plan.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	return res.Plan, text.String() + js.String()
}

func object(t *testing.T, m map[string]any, resource string, secret bool) *kubetasks.Object[*world] {
	t.Helper()
	o, err := kubetasks.NewObject[*world](m, resource, secret)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestObjectConverges: a dry run plans the creation and sends nothing; the apply PATCHes each object by
// server-side apply with kubeup's field manager, at the object's API path; a second run finds no change although
// the server added fields of its own (uid, resourceVersion, managedFields, a subject's default apiGroup); a field
// changed behind kubeup's back is a change, applied again; a field another manager added is none of kubeup's.
func TestObjectConverges(t *testing.T) {
	f, c := kubetest.New(t)
	w := &world{c}
	crb := func() *kubetasks.Object[*world] {
		return object(t, binding("system:bootstrappers:kubeup"), "clusterrolebindings", false)
	}
	const path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeup:kubelet-bootstrap"

	p, text := run(t, w, engine.DryRun, crb())
	if len(p.Changes) != 1 || len(f.Patches) != 0 {
		t.Fatalf("dry run: %d changes, %d PATCHes; want 1 change and none sent\n%s", len(p.Changes), len(f.Patches), text)
	}
	if !strings.Contains(text, "KubeObject/ClusterRoleBinding/kubeup:kubelet-bootstrap") || !strings.Contains(text, "system:node-bootstrapper") {
		t.Errorf("the dry run does not show the object and its manifest:\n%s", text)
	}
	run(t, w, engine.Apply, crb())
	if want := path + " fieldManager=kubeup force=true"; len(f.Patches) != 1 || f.Patches[0] != want {
		t.Fatalf("PATCHes %q, want [%q]", f.Patches, want)
	}
	if p, text := run(t, w, engine.DryRun, crb()); !p.Empty() {
		t.Fatalf("after the apply, a dry run plans changes (a perpetual diff from the server's own fields):\n%s", text)
	}

	// Another manager changes a field kubeup manages, and adds one it does not.
	f.Lock()
	obj := f.Objects[path]
	obj["subjects"].([]any)[0].(map[string]any)["name"] = "system:authenticated"
	obj["metadata"].(map[string]any)["labels"] = map[string]any{"someone": "else"}
	f.Unlock()
	p, text = run(t, w, engine.DryRun, crb())
	if len(p.Changes) != 1 || !strings.Contains(text, "system:authenticated") || strings.Contains(text, "someone") {
		t.Fatalf("want one change showing the changed subject and not the other manager's label:\n%s", text)
	}
	run(t, w, engine.Apply, crb())
	if got := f.Objects[path]["subjects"].([]any)[0].(map[string]any)["name"]; got != "system:bootstrappers:kubeup" || len(f.Patches) != 2 {
		t.Fatalf("subject %v after %d PATCHes, want system:bootstrappers:kubeup after 2", got, len(f.Patches))
	}
	if p, text := run(t, w, engine.DryRun, crb()); !p.Empty() {
		t.Fatalf("after the second apply, a dry run plans changes:\n%s", text)
	}
}

// TestObjectDropsAFieldNoLongerApplied: a field kubeup applied before and no longer names is removed by the
// next apply (server-side apply with the same field manager), and the run after that finds no change.
func TestObjectDropsAFieldNoLongerApplied(t *testing.T) {
	f, c := kubetest.New(t)
	w := &world{c}
	role := func(rules ...any) *kubetasks.Object[*world] {
		m := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": "kubeup:csr-approver"}, "aggregationRule": nil}
		delete(m, "aggregationRule")
		if rules != nil {
			m["rules"] = rules
		}
		return object(t, m, "clusterroles", false)
	}
	rule := map[string]any{"apiGroups": []any{"certificates.k8s.io"}, "resources": []any{"certificatesigningrequests"}, "verbs": []any{"get", "list"}}
	run(t, w, engine.Apply, role(rule))
	run(t, w, engine.Apply, role())
	if _, ok := f.Objects["/apis/rbac.authorization.k8s.io/v1/clusterroles/kubeup:csr-approver"]["rules"]; ok {
		t.Fatal("the rules kubeup no longer applies are still there")
	}
	if p, text := run(t, w, engine.DryRun, role()); !p.Empty() {
		t.Fatalf("a dry run plans changes:\n%s", text)
	}
}

// TestObjectSecretNeverShown: a Secret's manifest is applied whole, in the core group's namespaced path, and no
// plan (text or JSON), of its creation or of a change, shows its values.
func TestObjectSecretNeverShown(t *testing.T) {
	f, c := kubetest.New(t)
	w := &world{c}
	_, text := run(t, w, engine.DryRun, object(t, secret(), "secrets", true))
	if strings.Contains(text, sentinel) {
		t.Fatalf("the dry run shows the secret:\n%s", text)
	}
	run(t, w, engine.Apply, object(t, secret(), "secrets", true))
	obj, ok := f.Objects["/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef"]
	if !ok || !strings.Contains(f.Patches[0], "fieldManager=kubeup") {
		t.Fatalf("the Secret was not applied at its path: %v %q", f.Objects, f.Patches)
	}
	obj["stringData"].(map[string]any)["token-secret"] = sentinel + "-changed"
	p, text := run(t, w, engine.DryRun, object(t, secret(), "secrets", true))
	if p.Empty() || strings.Contains(text, sentinel) {
		t.Fatalf("a changed Secret: want a change that shows no value:\n%s", text)
	}
}

// TestObjectErrors: a 404 is an absent object; 403 is access denied; 5xx and 429 are retryable; another status
// names the method, the path and the API's message.
func TestObjectErrors(t *testing.T) {
	_, c := kubetest.New(t)
	err := c.Apply(context.Background(), "/apis/rbac.authorization.k8s.io/v1/clusterroles/x", []byte("{"), nil)
	if err == nil || !strings.Contains(err.Error(), "PATCH /apis/rbac.authorization.k8s.io/v1/clusterroles/x: 400") {
		t.Errorf("a malformed body: %v", err)
	}
	var v map[string]any
	if err := c.Get(context.Background(), "/api/v1/nodes/none", &v); !kubetasks.IsNotFound(err) {
		t.Errorf("GET of an absent object: %v, want a 404", err)
	}
	if _, err := kubetasks.NewObject[*world](map[string]any{"kind": "Secret"}, "secrets", true); err == nil {
		t.Error("NewObject took a manifest with no apiVersion or name")
	}
}

// TestObjectMarkRefusesAnothersObject: an object with a Mark is applied where there is none, and again over its
// own; one at its path without the label (someone else's) is refused in the dry run and the apply, and not
// changed.
func TestObjectMarkRefusesAnothersObject(t *testing.T) {
	f, c := kubetest.New(t)
	w := &world{c}
	cm := func(ns string) *kubetasks.Object[*world] {
		o := object(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "coredns", "namespace": ns, "labels": map[string]any{"kubeup.dev/addon": "coredns"}},
			"data":     map[string]any{"Corefile": ".:53 {}"}}, "configmaps", false)
		o.Mark = "kubeup.dev/addon=coredns"
		return o
	}
	run(t, w, engine.Apply, cm("kube-system"))
	if p, text := run(t, w, engine.DryRun, cm("kube-system")); !p.Empty() {
		t.Fatalf("kubeup's own object: a dry run plans changes:\n%s", text)
	}
	const theirs = "/api/v1/namespaces/other/configmaps/coredns"
	f.Lock()
	f.Objects[theirs] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "coredns", "namespace": "other"},
		"data": map[string]any{"Corefile": "mine"}}
	f.Unlock()
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		g := engine.NewGraph[*world]()
		engine.Add(g, cm("other"))
		_, err := engine.Run(context.Background(), g, w, engine.Options{Target: target})
		if err == nil || !strings.Contains(err.Error(), "is not kubeup's (it has no label kubeup.dev/addon=coredns)") {
			t.Errorf("%s over another's object: %v, want a refusal", target, err)
		}
	}
	if len(f.Patches) != 1 || f.Objects[theirs]["data"].(map[string]any)["Corefile"] != "mine" {
		t.Errorf("another's object was changed: PATCHes %q, %v", f.Patches, f.Objects[theirs])
	}
}
