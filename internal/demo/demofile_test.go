package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine/enginetest"
)

func TestDemoFileDeps(t *testing.T) {
	for _, task := range demoGraph().Tasks() {
		enginetest.CheckDeps(t, task)
	}
}

func TestDemoFileFind(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "present"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		want    *DemoFile
		wantErr string
	}{
		{name: "present", path: "present",
			want: &DemoFile{Path: "present", Contents: ptr("hello\n"), Mode: ptr[os.FileMode](0o600)}},
		{name: "absent", path: "absent/file", want: nil},
		{name: "a directory", path: "adir", wantErr: "is not a regular file"},
		{name: "outside the dir", path: "../escape", wantErr: `path "../escape" must be relative`},
		{name: "absolute", path: "/etc/passwd", wantErr: `path "/etc/passwd" must be relative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := (&DemoFile{Path: tt.path}).Find(context.Background(), &Dir{Root: dir})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Find error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDemoFileCheckChanges(t *testing.T) {
	existing := &DemoFile{Path: "f", Contents: ptr("x"), Mode: ptr[os.FileMode](0o644)}
	tests := []struct {
		name     string
		actual   *DemoFile
		expected *DemoFile
		wantErr  string
	}{
		{name: "create", expected: &DemoFile{Path: "f", Contents: ptr("x")}},
		{name: "create without contents", expected: &DemoFile{Path: "f", Mode: ptr[os.FileMode](0o644)},
			wantErr: "file f: Contents is required to create the file"},
		{name: "change mode only", actual: existing, expected: &DemoFile{Path: "f", Mode: ptr[os.FileMode](0o600)}},
		{name: "not a permission bit", actual: existing,
			expected: &DemoFile{Path: "f", Mode: ptr(os.ModeSetuid | 0o755)},
			wantErr:  "only 0777 bits can be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.expected.CheckChanges(tt.actual, tt.expected, tt.expected)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckChanges: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckChanges error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestDemoFileRenderKeeps checks that Render keeps what the task does not care about, and leaves no temporary
// file behind.
func TestDemoFileRenderKeeps(t *testing.T) {
	ctx := context.Background()
	d := &Dir{Root: t.TempDir()}
	if err := os.WriteFile(filepath.Join(d.Root, "f"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expected := &DemoFile{Path: "f", Mode: ptr[os.FileMode](0o600)}
	actual, err := expected.Find(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := expected.Render(ctx, d, actual, expected, expected); err != nil {
		t.Fatalf("Render: %v", err)
	}
	got, err := expected.Find(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	want := &DemoFile{Path: "f", Contents: ptr("keep me\n"), Mode: ptr[os.FileMode](0o600)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after Render (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(d.Root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after Render, want 1 (no temporary file left)", len(entries))
	}
}
