package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/golden"
)

const secretValue = "hunter2-do-not-print"

// reportGraph is a dry run with a bit of everything: creates and modifies, a secret, a file's contents, maps and
// sets, in an order that is not the report's.
func reportGraph() (*engine.Graph[*World], *World) {
	world := newWorld(
		Item{Name: "/etc/kubernetes/manifests/etcd.yaml", Contents: ptr("apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\nspec:\n  containers:\n  - image: etcd:3.5.9\n    name: etcd\n"), Order: []string{}},
		Item{Name: "etcd-main-b", Size: ptr(20), Labels: map[string]string{"k8s.io/role/control-plane": "1"}, Zones: []string{"b"}, Order: []string{}, Password: ptr(engine.NewSecret("old-" + secretValue))},
		Item{Name: "unchanged", Size: ptr(1), Order: []string{}},
		Item{Name: "/etc/default/kubelet", Contents: ptr("# kubelet's flags\nDAEMON_ARGS=\"--cgroup-driver=systemd --max-pods=110 --v=2\"\n"), Order: []string{}},
	)
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "unchanged", Size: ptr(1), Order: []string{}})
	engine.Add(g, &Item{Name: "etcd-main-b", Size: ptr(30), Labels: map[string]string{"k8s.io/role/control-plane": "1", "kubernetes.io/cluster/demo": "owned"}, Zones: []string{"b"}, Order: []string{}, Password: ptr(engine.NewSecret(secretValue))})
	engine.Add(g, &Item{Name: "/etc/kubernetes/manifests/etcd.yaml", Contents: ptr("apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\nspec:\n  containers:\n  - image: etcd:3.5.12\n    name: etcd\n"), Order: []string{}})
	engine.Add(g, &Item{Name: "etcd-main-a", Size: ptr(20), Zones: []string{"a", "b"}, Labels: map[string]string{"b": "2", "a": "1"}, Password: ptr(engine.NewSecret(secretValue))})
	engine.Add(g, &Item{Name: "/etc/kubernetes/kubelet.conf", Contents: ptr("line one\nline two\n")})
	engine.Add(g, &Item{Name: "/etc/default/kubelet", Contents: ptr("# kubelet's flags\nDAEMON_ARGS=\"--cgroup-driver=systemd --max-pods=120 --v=2\"\n"), Order: []string{}})
	return g, world
}

func reportPlan(t *testing.T) *engine.Plan {
	t.Helper()
	g, world := reportGraph()
	res, err := engine.Run(context.Background(), g, world, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

func TestReportGolden(t *testing.T) {
	var out bytes.Buffer
	if err := reportPlan(t).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/report.txt", out.Bytes())
	if strings.Contains(out.String(), secretValue) {
		t.Error("the report prints a secret")
	}
}

func TestPlanJSONGolden(t *testing.T) {
	var out bytes.Buffer
	if err := reportPlan(t).WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/plan.json", out.Bytes())
	if strings.Contains(out.String(), secretValue) {
		t.Error("the JSON plan prints a secret")
	}
	var decoded struct {
		APIVersion string `json:"apiVersion"`
		Changes    []struct {
			Key    string `json:"key"`
			Action string `json:"action"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil {
		t.Fatalf("the plan is not valid JSON: %v", err)
	}
	if decoded.APIVersion != engine.PlanAPIVersion || len(decoded.Changes) != 5 {
		t.Errorf("decoded apiVersion %q with %d changes, want %q with 5", decoded.APIVersion, len(decoded.Changes), engine.PlanAPIVersion)
	}
}

func TestEmptyPlan(t *testing.T) {
	var text, js bytes.Buffer
	(&engine.Plan{}).WriteText(&text)
	(&engine.Plan{}).WriteJSON(&js)
	if text.String() != "No changes need to be applied\n" {
		t.Errorf("text = %q", text.String())
	}
	if !strings.Contains(js.String(), `"changes": []`) {
		t.Errorf("an empty JSON plan should hold an empty list of changes, not null:\n%s", js.String())
	}
}

func TestDOTGolden(t *testing.T) {
	g := engine.NewGraph[*World]()
	vol := engine.Add(g, &Item{Name: "etcd-main-a"})
	engine.Add(g, &Item{Name: `mount "a"`, Parent: vol}, engine.WithLifecycle(engine.ExistsAndWarnIfChanges))
	engine.Add(g, &Item{Name: "manifest", Needs: []*Item{vol, {Name: "not-in-graph"}}})
	engine.Add(g, &Probe{Name: "zone"})
	g.SetLifecycle("Probe", engine.Ignore)
	var out bytes.Buffer
	if err := g.WriteDOT(&out); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/graph.dot", out.Bytes())
}

// TestPlanSpec: the spec's changes come first, once; a resource's field-path changes that repeat them are
// counted, not shown again, in the text plan; the JSON plan keeps them all.
func TestPlanSpec(t *testing.T) {
	spec := []engine.PathChange{
		{Path: "spec.kubelet.maxPods", Old: json.Number("110"), New: json.Number("120")},
		{Path: "instanceGroups[nodes].spec.maxSize", Old: json.Number("1"), New: json.Number("3")},
	}
	cfg := engine.Key{Type: "StoreFile", Name: "c/nodeup/nodes"}
	completed := engine.Key{Type: "StoreFile", Name: "c/cluster-completed.spec"}
	p := &engine.Plan{
		Changes: []engine.Change{
			{Key: completed, Action: engine.Modify, Fields: []engine.FieldChange{{Name: "Contents",
				Old: "kind: Cluster\nmetadata: {name: c}\nspec: {kubelet: {maxPods: 110}}\n---\nkind: InstanceGroup\nmetadata: {name: nodes}\nspec: {maxSize: 1}\n",
				New: "kind: Cluster\nmetadata: {name: c}\nspec: {kubelet: {maxPods: 120}}\n---\nkind: InstanceGroup\nmetadata: {name: nodes}\nspec: {maxSize: 3}\n"}}},
			{Key: cfg, Action: engine.Modify, Fields: []engine.FieldChange{{Name: "Shown",
				Old: "cluster:\n  spec: {kubelet: {maxPods: 110}}\ninstanceGroup:\n  spec: {maxSize: 1}\nfiles:\n- path: /a\n  mode: \"0644\"\n",
				New: "cluster:\n  spec: {kubelet: {maxPods: 120}}\ninstanceGroup:\n  spec: {maxSize: 3}\nfiles:\n- path: /a\n  mode: \"0600\"\n"}}},
		},
		Spec: spec,
		Echoes: []engine.Echo{
			{Key: completed, Field: "Contents", Prefix: "Cluster[c].", SpecPrefix: ""},
			{Key: completed, Field: "Contents", Prefix: "InstanceGroup[nodes].", SpecPrefix: "instanceGroups[nodes]."},
			{Key: cfg, Field: "Shown", Prefix: "cluster.", SpecPrefix: ""},
			{Key: cfg, Field: "Shown", Prefix: "instanceGroup.", SpecPrefix: "instanceGroups[nodes]."},
		},
	}
	var text, js bytes.Buffer
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := `Spec changes:
  spec.kubelet.maxPods: 110 -> 120
  instanceGroups[nodes].spec.maxSize: 1 -> 3
Will modify resources:
  StoreFile/c/cluster-completed.spec
    Contents
      (2 changes shown in the spec changes above)
  StoreFile/c/nodeup/nodes
    Shown
      files[/a].mode: 0644 -> 0600
      (and 2 changes shown in the spec changes above)
Must specify --yes to apply changes
`
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("text plan (-want +got):\n%s", diff)
	}
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"path": "cluster.spec.kubelet.maxPods"`, `"path": "InstanceGroup[nodes].spec.maxSize"`,
		`"path": "instanceGroups[nodes].spec.maxSize"`, `"modify": 2`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("the JSON plan lacks %s:\n%s", want, js.String())
		}
	}
}

// A Secret is redacted by every printer a developer might reach for.
func TestSecretNeverPrints(t *testing.T) {
	s := engine.NewSecret(secretValue)
	type holder struct{ S engine.Secret }
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "secret", s, "holder", holder{s})
	js, _ := json.Marshal(holder{s})
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", s), "%s": fmt.Sprintf("%s", s), "%+v": fmt.Sprintf("%+v", holder{s}),
		"%#v": fmt.Sprintf("%#v", holder{s}), "%q": fmt.Sprintf("%q", s), "%x": fmt.Sprintf("%x", s),
		"json": string(js), "slog": logs.String(),
	} {
		if strings.Contains(out, secretValue) || strings.Contains(out, fmt.Sprintf("%x", secretValue)) {
			t.Errorf("%s prints the secret: %s", name, out)
		}
		if !strings.Contains(out, engine.Redacted) {
			t.Errorf("%s = %s, want %s", name, out, engine.Redacted)
		}
	}
	if s.Reveal() != secretValue {
		t.Error("Reveal does not return the value")
	}
}

// TestWriteTextAbbreviatesCreatedText checks that a created multi-line value shows its first lines and a count
// of the rest, and that a modification of it still shows the change.
func TestWriteTextAbbreviatesCreatedText(t *testing.T) {
	var text strings.Builder
	for i := range 30 {
		fmt.Fprintf(&text, "line %d\n", i)
	}
	long := text.String()
	changed := strings.Replace(long, "line 25\n", "line twenty-five\n", 1)
	p := &engine.Plan{Changes: []engine.Change{
		{Key: engine.Key{Type: "File", Name: "new"}, Action: engine.Create, Fields: []engine.FieldChange{{Name: "Contents", New: long}}},
		{Key: engine.Key{Type: "File", Name: "old"}, Action: engine.Modify, Fields: []engine.FieldChange{{Name: "Contents", Old: long, New: changed}}},
	}}
	var out strings.Builder
	if err := p.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"+ line 9\n", "  ... (20 more lines)\n", "- line 25\n", "+ line twenty-five\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "+ line 10\n") {
		t.Errorf("report shows the 11th created line:\n%s", got)
	}
}

// Sealed is a test task whose object cannot change in place (a Replacer): a new value is a new object, named
// <Name>-<Value> in the world.
type Sealed struct {
	Name  string
	Value string
}

var (
	_ engine.Resource[*Sealed, *World] = (*Sealed)(nil)
	_ engine.Renderer[*Sealed, *World] = (*Sealed)(nil)
	_ engine.Replacer[*Sealed]         = (*Sealed)(nil)
)

func (s *Sealed) Key() engine.Key     { return engine.Key{Type: "Sealed", Name: s.Name} }
func (s *Sealed) Deps() []engine.Task { return nil }

func (s *Sealed) Find(ctx context.Context, w *World) (*Sealed, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	it, ok := w.items["sealed:"+s.Name]
	if !ok {
		return nil, nil
	}
	return &Sealed{Name: s.Name, Value: *it.Contents}, nil
}

func (s *Sealed) CheckChanges(actual, expected, changes *Sealed) error { return nil }

func (s *Sealed) Render(ctx context.Context, w *World, actual, expected, changes *Sealed) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.items["sealed:"+s.Name] = Item{Name: "sealed:" + s.Name, Contents: ptr(expected.Value)}
	return nil
}

func (s *Sealed) Replaces(actual *Sealed) string {
	return "replaces " + actual.Name + "-" + actual.Value
}

// A task that cannot change in place plans a replacement that names what it replaces, not a modification; the
// deletions a caller adds are listed under their own title, with why (a GCE template change showed as "modify"
// and the old template's deletion was not in the plan at all).
func TestPlanReplacementsAndDeletions(t *testing.T) {
	world := newWorld(Item{Name: "sealed:tmpl", Contents: ptr("v1")})
	g := engine.NewGraph[*World]()
	engine.Add(g, &Sealed{Name: "tmpl", Value: "v2"})
	engine.Add(g, &Sealed{Name: "fresh", Value: "v1"})
	res, err := engine.Run(context.Background(), g, world, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	res.Plan.Add(engine.Change{Key: engine.Key{Type: "Sealed", Name: "tmpl-v1"}, Action: engine.Delete, Note: "no longer used once tmpl is replaced"})
	var text bytes.Buffer
	if err := res.Plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := `Will create resources:
  Sealed/fresh
    Value    v1
Will replace resources:
  Sealed/tmpl (replaces tmpl-v1)
    Value    v1 -> v2
Will delete resources:
  Sealed/tmpl-v1 (no longer used once tmpl is replaced)
Must specify --yes to apply changes
`
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("text plan (-want +got):\n%s", diff)
	}
	var js bytes.Buffer
	if err := res.Plan.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Summary map[string]int `json:"summary"`
		Changes []struct {
			Key, Action, Note string
		} `json:"changes"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"create": 1, "modify": 0, "replace": 1, "delete": 1}, decoded.Summary); diff != "" {
		t.Errorf("JSON summary (-want +got):\n%s", diff)
	}
	wantChanges := []struct{ Key, Action, Note string }{
		{"Sealed/fresh", "create", ""}, {"Sealed/tmpl", "replace", "replaces tmpl-v1"},
		{"Sealed/tmpl-v1", "delete", "no longer used once tmpl is replaced"},
	}
	if diff := cmp.Diff(wantChanges, decoded.Changes); diff != "" {
		t.Errorf("JSON changes (-want +got):\n%s", diff)
	}
}

// Versioned is a test task whose change makes a new version of its object (a Noter): the world keeps its
// versions as the item's lines.
type Versioned struct {
	Name  string
	Value string

	versions int // found: how many the object has
}

var (
	_ engine.Resource[*Versioned, *World] = (*Versioned)(nil)
	_ engine.Noter[*Versioned]            = (*Versioned)(nil)
)

func (v *Versioned) Key() engine.Key     { return engine.Key{Type: "Versioned", Name: v.Name} }
func (v *Versioned) Deps() []engine.Task { return nil }

func (v *Versioned) Find(ctx context.Context, w *World) (*Versioned, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	it, ok := w.items["versioned:"+v.Name]
	if !ok {
		return nil, nil
	}
	versions := strings.Split(*it.Contents, "\n")
	return &Versioned{Name: v.Name, Value: versions[len(versions)-1], versions: len(versions)}, nil
}

func (v *Versioned) CheckChanges(actual, expected, changes *Versioned) error { return nil }

func (v *Versioned) ChangeNote(actual *Versioned) string {
	return fmt.Sprintf("new version %d, default %d -> %d", actual.versions+1, actual.versions, actual.versions+1)
}

// A modification says, after its key, what its fields do not show (Noter), in the text and the JSON plan; a
// creation says nothing more (a launch template's new version was not in the plan).
func TestPlanModificationNote(t *testing.T) {
	world := newWorld(Item{Name: "versioned:a", Contents: ptr("v1\nv2")})
	g := engine.NewGraph[*World]()
	engine.Add(g, &Versioned{Name: "a", Value: "v3"})
	engine.Add(g, &Versioned{Name: "b", Value: "v1"})
	res, err := engine.Run(context.Background(), g, world, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := res.Plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := `Will create resources:
  Versioned/b
    Value    v1
Will modify resources:
  Versioned/a (new version 3, default 2 -> 3)
    Value    v2 -> v3
Must specify --yes to apply changes
`
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("text plan (-want +got):\n%s", diff)
	}
	var js bytes.Buffer
	if err := res.Plan.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Changes []struct{ Key, Note string } `json:"changes"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]struct{ Key, Note string }{{"Versioned/a", "new version 3, default 2 -> 3"}, {"Versioned/b", ""}},
		decoded.Changes); diff != "" {
		t.Errorf("JSON plan's notes (-want +got):\n%s", diff)
	}
}

// A dry run with failures still returns the plan of every task that could be planned; the plan lists the tasks
// that could not (failed, or skipped for a failed dependency) and its text ends by saying it is incomplete,
// never "Must specify --yes" or "No changes need to be applied" (nodeup, protokube and kubeup printed no plan at
// all).
func TestFailedDryRunKeepsThePlanOfWhatCouldBePlanned(t *testing.T) {
	world := newWorld()
	world.findHook["broken"] = func(context.Context, int) error { return errors.New("permission denied") }
	g := engine.NewGraph[*World]()
	broken := engine.Add(g, &Item{Name: "broken", Size: ptr(1)})
	engine.Add(g, &Item{Name: "after-broken", Parent: broken})
	engine.Add(g, &Item{Name: "fine", Size: ptr(2)})
	res, err := engine.Run(context.Background(), g, world, engine.Options{Target: engine.DryRun})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) || len(runErr.Failed) != 1 || len(runErr.Skipped) != 1 {
		t.Fatalf("err = %v, want broken failed and after-broken skipped", err)
	}
	if res == nil || res.Plan == nil {
		t.Fatal("a dry run with failures returned no plan")
	}
	if diff := cmp.Diff([]engine.Key{{Type: "Item", Name: "after-broken"}, {Type: "Item", Name: "broken"}}, res.Plan.Incomplete); diff != "" {
		t.Errorf("Incomplete (-want +got):\n%s", diff)
	}
	var text bytes.Buffer
	if err := res.Plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := `Will create resources:
  Item/fine
    Size    2
The plan is incomplete: 2 task(s) failed or did not run, and what they would change is not shown (see the errors)
`
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("text plan (-want +got):\n%s", diff)
	}
	var js bytes.Buffer
	if err := res.Plan.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Incomplete []string `json:"incomplete"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Item/after-broken", "Item/broken"}, decoded.Incomplete); diff != "" {
		t.Errorf("JSON incomplete (-want +got):\n%s", diff)
	}
}
