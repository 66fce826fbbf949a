package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of ending the test.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper()                         {}
func (r *recorder) Logf(format string, args ...any) {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg += fmt.Sprintf(format, args...)
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// comparing makes the test compare even when the whole run is updating golden files.
func comparing(t *testing.T) {
	t.Helper()
	t.Setenv("UPDATE_GOLDEN", "")
	saved := *update
	*update = false
	t.Cleanup(func() { *update = saved })
}

func TestAssertCompares(t *testing.T) {
	comparing(t)
	path := filepath.Join(t.TempDir(), "report.golden")
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		got      string
		wantFail bool
		wantMsg  []string
	}{
		{name: "equal", path: path, got: "one\ntwo\nthree\n"},
		{name: "line changed", path: path, got: "one\nTWO\nthree\n", wantFail: true,
			wantMsg: []string{path, "(-want +got)", `-`, `"two"`, `+`, `"TWO"`}},
		{name: "missing final newline", path: path, got: "one\ntwo\nthree", wantFail: true,
			wantMsg: []string{"(-want +got)"}},
		{name: "no golden file", path: filepath.Join(t.TempDir(), "absent.golden"), got: "x", wantFail: true,
			wantMsg: []string{"does not exist", "-update"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Assert(r, tt.path, []byte(tt.got))
			if r.failed != tt.wantFail {
				t.Fatalf("failed = %v, want %v; message:\n%s", r.failed, tt.wantFail, r.msg)
			}
			for _, s := range tt.wantMsg {
				if !strings.Contains(r.msg, s) {
					t.Errorf("message does not contain %q:\n%s", s, r.msg)
				}
			}
		})
	}
}

func TestAssertUpdates(t *testing.T) {
	tests := []struct {
		name   string
		enable func(t *testing.T)
	}{
		{name: "flag", enable: func(t *testing.T) {
			comparing(t)
			*update = true
		}},
		{name: "env", enable: func(t *testing.T) {
			comparing(t)
			t.Setenv("UPDATE_GOLDEN", "1")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.enable(t)
			path := filepath.Join(t.TempDir(), "testdata", "nested", "out.golden")
			r := &recorder{TB: t}
			Assert(r, path, []byte("new\n"))
			if r.failed {
				t.Fatalf("Assert failed while updating: %s", r.msg)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != "new\n" {
				t.Errorf("golden file holds %q, want %q", b, "new\n")
			}
		})
	}
}
