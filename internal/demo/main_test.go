package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/golden"
)

// TestApplyThenNoChanges holds the demo graph to the engine's contract: the apply changes exactly what the dry
// run announced, and afterwards neither a dry run nor an apply finds anything to do.
func TestApplyThenNoChanges(t *testing.T) {
	applied := enginetest.ApplyThenNoChanges(t, context.Background(), &Dir{Root: t.TempDir()}, demoGraph)
	if got, want := len(applied.Changes), demoGraph().Len(); got != want {
		t.Errorf("apply into an empty directory made %d changes, want %d (one per file)", got, want)
	}
}

// TestRun runs the whole demo into an empty directory: the first dry run announces every file, the apply writes
// them, and the second dry run finds nothing left to do.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), dir, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, &stderr)
	}
	golden.Assert(t, "testdata/run.golden", stdout.Bytes())
	if !strings.HasSuffix(stdout.String(), "Must specify --yes to apply changes\nNo changes need to be applied\n") {
		t.Errorf("stdout does not end with a non-empty plan and then an empty one:\n%s", &stdout)
	}
	for _, want := range []string{"== dry run: what would change", "== apply", "== dry run again: nothing left to do",
		"Tasks: 5 done / 5 total; 0 running", "task=DemoFile/etc/kubeup/node.env"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not contain %q:\n%s", want, &stderr)
		}
	}
	for _, task := range demoGraph().Tasks() {
		f := task.(*DemoFile)
		p := filepath.Join(dir, f.Path)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != *f.Contents {
			t.Errorf("%s holds %q, want %q", f.Path, b, *f.Contents)
		}
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		wantMode := defaultMode
		if f.Mode != nil {
			wantMode = *f.Mode
		}
		if info.Mode() != wantMode {
			t.Errorf("%s has mode %v, want %v", f.Path, info.Mode(), wantMode)
		}
	}
}

// TestDrift changes the world behind the engine's back: the dry run reports exactly what drifted, and one apply
// puts it right.
func TestDrift(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := run(ctx, dir, io.Discard, io.Discard); err != nil {
		t.Fatalf("run: %v", err)
	}
	env := filepath.Join(dir, "etc/kubeup/node.env")
	if err := os.WriteFile(env, []byte("CLUSTER_NAME=other.example.com\nNODE_ROLE=control-plane\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "var/lib/kubeup/converged"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "etc/kubernetes/manifests/kube-apiserver.yaml")); err != nil {
		t.Fatal(err)
	}

	world, logger := &Dir{Root: dir}, slog.New(slog.DiscardHandler)
	var report bytes.Buffer
	plan, err := dryRun(ctx, world, logger, &report)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/drift.golden", report.Bytes())
	if got := len(plan.Changes); got != 3 {
		t.Errorf("dry run after drift has %d changes, want 3:\n%s", got, &report)
	}

	if _, err := engine.Run(ctx, demoGraph(), world, engine.Options{Target: engine.Apply, Logger: logger}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	report.Reset()
	if plan, err = dryRun(ctx, world, logger, &report); err != nil {
		t.Fatal(err)
	}
	if !plan.Empty() {
		t.Errorf("dry run after apply is not empty:\n%s", &report)
	}
}
