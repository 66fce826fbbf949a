package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f.json")
	for _, data := range []string{"one\n", "two\n"} {
		if err := Write(name, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil || string(got) != data {
			t.Fatalf("ReadFile = %q, %v; want %q", got, err, data)
		}
		st, err := os.Stat(name)
		if err != nil || st.Mode().Perm() != 0o640 {
			t.Fatalf("mode %v, %v; want 0640", st.Mode(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %v, want the file alone", entries)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed write left %v", entries)
	}
}

// TestRemoveStale: a killed writer's temporary file (no flock) is removed; a live writer's (flocked) and any
// other file are left alone.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f.json")
	live, err := CreateTemp(name)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	stale := filepath.Join(dir, ".f.json.tmp-123")
	other := filepath.Join(dir, ".f.json.tmp-abc")
	for _, p := range []string{stale, other, name} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveStale(dir, func(n string) bool { return IsTempOf(n, "f.json") })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{stale}) {
		t.Errorf("RemoveStale removed %v, want [%s]", removed, stale)
	}
	for _, p := range []string{live.Name(), other, name} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it left", p, err)
		}
	}
}

func TestTempNames(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		of, any    bool
	}{
		{".f.json.tmp-12", "f.json", true, true},
		{".f.json.tmp-", "f.json", false, false},
		{".f.json.tmp-1a", "f.json", false, false},
		{"f.json.tmp-12", "f.json", false, false},
		{".g.tmp-7", "f.json", false, true},
		{".tmp-7", "f.json", false, false},
	} {
		if got := IsTempOf(tc.name, tc.base); got != tc.of {
			t.Errorf("IsTempOf(%q, %q) = %v, want %v", tc.name, tc.base, got, tc.of)
		}
		if got := IsTemp(tc.name); got != tc.any {
			t.Errorf("IsTemp(%q) = %v, want %v", tc.name, got, tc.any)
		}
	}
}
