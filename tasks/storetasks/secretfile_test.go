package storetasks_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// The secret a stored object carries in these tests, and how redact shows it.
const sentinel = "SENTINEL-PRIVATE-KEY-7f3a9c"

// redact shows an object of "name: value" lines with every value of a line named key replaced.
func redact(contents string) (string, error) {
	if !strings.HasPrefix(contents, "# object\n") {
		return "", errors.New("not an object of this test")
	}
	lines := strings.Split(contents, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "key: ") {
			lines[i] = "key: " + engine.Redacted
		}
	}
	return strings.Join(lines, "\n"), nil
}

// object is a stored object holding a certificate (shown) and a key (never shown).
func object(cert, key string) string {
	return "# object\ncert: " + cert + "\nkey: " + key + "\n"
}

func secretFile(contents string) *storetasks.SecretFile[*world] {
	return &storetasks.SecretFile[*world]{
		Path: "c/nodeup/nodes",
		Make: func() (engine.Secret, string, error) {
			shown, err := redact(contents)
			return engine.NewSecret(contents), shown, err
		},
		Redact: redact,
	}
}

func plans(t *testing.T, p *engine.Plan) (text, js string) {
	t.Helper()
	var tb, jb bytes.Buffer
	if err := p.WriteText(&tb); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	return tb.String(), jb.String()
}

func runSecretFile(t *testing.T, w *world, f *storetasks.SecretFile[*world], target engine.Target) *engine.Plan {
	t.Helper()
	g := engine.NewGraph[*world]()
	engine.Add(g, f)
	res, err := engine.Run(context.Background(), g, w, engine.Options{Target: target})
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return res.Plan
}

// TestSecretFilePlansShowShown: the plans of a creation and of a modification, in text and JSON, show the
// object as Redact shows it, line by line, and its contents as (sensitive); the secret is in none of them.
func TestSecretFilePlansShowShown(t *testing.T) {
	w := &world{store: &memStore{Objects: map[string]string{}}}
	first := object("CERT-1", sentinel+"-1")
	second := object("CERT-2", sentinel+"-2")

	created := runSecretFile(t, w, secretFile(first), engine.Apply)
	if got := w.store.Objects["c/nodeup/nodes"]; got != first {
		t.Fatalf("the store holds %q, want the whole object", got)
	}
	modified := runSecretFile(t, w, secretFile(second), engine.DryRun)

	for _, tt := range []struct {
		name     string
		plan     *engine.Plan
		wantText []string
		wantJSON []string
	}{
		{
			name:     "create",
			plan:     created,
			wantText: []string{"Will create resources:", "StoreFile/c/nodeup/nodes", "Contents    (sensitive)", "+ cert: CERT-1", "+ key: (sensitive)"},
			wantJSON: []string{`"name": "Contents"`, `"after": "(sensitive)"`, `"name": "Shown"`, `"after": "# object\ncert: CERT-1\nkey: (sensitive)\n"`},
		},
		{
			// How a change of Shown is laid out (a line diff, a diff by field) is the engine's to choose: the plan
			// names the field and shows the certificate before and after.
			name:     "modify",
			plan:     modified,
			wantText: []string{"Will modify resources:", "Contents    (sensitive) -> (sensitive)", "Shown", "CERT-1", "CERT-2"},
			wantJSON: []string{`"name": "Contents"`, `"before": "(sensitive)"`, `"name": "Shown"`, "CERT-1", "CERT-2"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, js := plans(t, tt.plan)
			for _, want := range tt.wantText {
				if !strings.Contains(text, want) {
					t.Errorf("the text plan does not say %q:\n%s", want, text)
				}
			}
			for _, want := range tt.wantJSON {
				if !strings.Contains(js, want) {
					t.Errorf("the JSON plan does not say %s:\n%s", want, js)
				}
			}
			for _, out := range []string{text, js} {
				if strings.Contains(out, sentinel) {
					t.Errorf("the plan shows the secret:\n%s", out)
				}
			}
		})
	}
	// A change of the secret alone is a change, shown without it.
	keyOnly := runSecretFile(t, w, secretFile(object("CERT-1", sentinel+"-rotated")), engine.DryRun)
	text, js := plans(t, keyOnly)
	if keyOnly.Empty() || !strings.Contains(text, "Contents    (sensitive) -> (sensitive)") {
		t.Errorf("a new key is not a change:\n%s", text)
	}
	if strings.Contains(text+js, sentinel) {
		t.Errorf("the plan shows the secret:\n%s\n%s", text, js)
	}
}

func TestSecretFileApplyThenNoChanges(t *testing.T) {
	w := &world{store: &memStore{Objects: map[string]string{}}}
	obj := object("CERT", sentinel)
	plan := enginetest.ApplyThenNoChanges(t, context.Background(), w, func() *engine.Graph[*world] {
		g := engine.NewGraph[*world]()
		engine.Add(g, secretFile(obj))
		return g
	})
	if len(plan.Changes) != 1 || w.store.Writes != 1 || w.store.Objects["c/nodeup/nodes"] != obj {
		t.Errorf("%d changes, %d writes, stored %q", len(plan.Changes), w.store.Writes, w.store.Objects["c/nodeup/nodes"])
	}
}

// TestSecretFileUnreadableObject: an object Redact cannot read is shown as such, never quoted, and replaced.
func TestSecretFileUnreadableObject(t *testing.T) {
	w := &world{store: &memStore{Objects: map[string]string{"c/nodeup/nodes": "garbage " + sentinel}}}
	plan := runSecretFile(t, w, secretFile(object("CERT", "KEY")), engine.DryRun)
	text, js := plans(t, plan)
	if !strings.Contains(text, "an object kubeup cannot read") || !strings.Contains(text, "not an object of this test") {
		t.Errorf("the plan does not say the object cannot be read:\n%s", text)
	}
	if strings.Contains(text+js, sentinel) {
		t.Errorf("the plan quotes the unreadable object:\n%s\n%s", text, js)
	}
	runSecretFile(t, w, secretFile(object("CERT", "KEY")), engine.Apply)
	if got := w.store.Objects["c/nodeup/nodes"]; got != object("CERT", "KEY") {
		t.Errorf("the store holds %q", got)
	}
}

func TestSecretFileRequiresContentsAndRedact(t *testing.T) {
	for _, f := range []*storetasks.SecretFile[*world]{
		{Path: "a", Redact: redact},
		{Path: "a", Contents: ptr(engine.NewSecret("x"))},
	} {
		if err := f.CheckChanges(nil, f, f); err == nil {
			t.Errorf("CheckChanges accepted %+v", f)
		}
	}
}

// TestSecretFileMakeErrors: an error of Make fails the task, as an error of Find would, and writes nothing.
func TestSecretFileMakeErrors(t *testing.T) {
	w := &world{store: &memStore{Objects: map[string]string{}}}
	f := &storetasks.SecretFile[*world]{Path: "a", Redact: redact,
		Make: func() (engine.Secret, string, error) { return engine.Secret{}, "", errors.New("no keypair yet") }}
	g := engine.NewGraph[*world]()
	engine.Add(g, f)
	_, err := engine.Run(context.Background(), g, w, engine.Options{Target: engine.Apply})
	if err == nil || !strings.Contains(err.Error(), "resolving: no keypair yet") {
		t.Errorf("Run = %v, want the error of Make", err)
	}
	if w.store.Writes != 0 {
		t.Error("something was written")
	}
}

func TestSecretFileDeps(t *testing.T) {
	conf := &storetasks.File[*world]{Path: "b", Contents: ptr("")}
	enginetest.CheckDeps(t, &storetasks.SecretFile[*world]{Path: "a", After: []engine.Task{conf}})
}

// TestSecretFileStoredAsMadeIsNotRedactedAgain: an object stored as the task makes it shows as the task's Shown,
// without a call of Redact (a node configuration's decodes and encodes its YAML); one that differs is redacted.
func TestSecretFileStoredAsMadeIsNotRedactedAgain(t *testing.T) {
	obj := object("CERT", sentinel)
	w := &world{store: &memStore{Objects: map[string]string{"c/nodeup/nodes": obj}}}
	redacted := 0
	f := secretFile(obj)
	f.Redact = func(contents string) (string, error) {
		redacted++
		return redact(contents)
	}
	if plan := runSecretFile(t, w, f, engine.DryRun); !plan.Empty() || redacted != 0 {
		t.Errorf("an object stored as made: %d changes, Redact called %d times; want none", len(plan.Changes), redacted)
	}
	w.store.Objects["c/nodeup/nodes"] = object("CERT-2", sentinel)
	plan := runSecretFile(t, w, f, engine.DryRun)
	text, _ := plans(t, plan)
	if plan.Empty() || redacted != 1 || !strings.Contains(text, "CERT-2") {
		t.Errorf("an object stored otherwise: Redact called %d times, plan:\n%s", redacted, text)
	}
}
