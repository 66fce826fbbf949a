// Package golden compares test output with golden files under a package's testdata/ and rewrites them on
// request: `go test ./... -update` (or `make update-golden`), or UPDATE_GOLDEN=1 in the environment. Review the
// rewritten files with git diff before committing them.
//
// Only tests import it: it defines the -update test flag. It imports nothing from kubeup.
package golden

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files with the output of the tests")

// Updating reports whether golden files are being rewritten: the test binary runs with -update, or
// UPDATE_GOLDEN=1 is set.
func Updating() bool {
	return *update || os.Getenv("UPDATE_GOLDEN") == "1"
}

// Assert compares got with the golden file at path (relative to the package under test, by convention
// testdata/NAME.golden) and reports a line diff (-want +got) when they differ. When Updating, it writes got to
// path instead, creating the parent directories, and the test passes.
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	if Updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("updating golden file: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("updating golden file: %v", err)
		}
		t.Logf("updated golden file %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("golden file %s does not exist: run `go test -update` (or `make update-golden`) to create it", path)
		return
	}
	if err != nil {
		t.Fatalf("reading golden file: %v", err)
		return
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("output differs from golden file %s (-want +got):\n%s\n"+
			"If the new output is right, run `go test -update` (or `make update-golden`) and review the diff.",
			path, diff)
	}
}
