package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

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
	)
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "unchanged", Size: ptr(1), Order: []string{}})
	engine.Add(g, &Item{Name: "etcd-main-b", Size: ptr(30), Labels: map[string]string{"k8s.io/role/control-plane": "1", "kubernetes.io/cluster/demo": "owned"}, Zones: []string{"b"}, Order: []string{}, Password: ptr(engine.NewSecret(secretValue))})
	engine.Add(g, &Item{Name: "/etc/kubernetes/manifests/etcd.yaml", Contents: ptr("apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\nspec:\n  containers:\n  - image: etcd:3.5.12\n    name: etcd\n"), Order: []string{}})
	engine.Add(g, &Item{Name: "etcd-main-a", Size: ptr(20), Zones: []string{"a", "b"}, Labels: map[string]string{"b": "2", "a": "1"}, Password: ptr(engine.NewSecret(secretValue))})
	engine.Add(g, &Item{Name: "/etc/kubernetes/kubelet.conf", Contents: ptr("line one\nline two\n")})
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
	if decoded.APIVersion != engine.PlanAPIVersion || len(decoded.Changes) != 4 {
		t.Errorf("decoded apiVersion %q with %d changes, want %q with 4", decoded.APIVersion, len(decoded.Changes), engine.PlanAPIVersion)
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
