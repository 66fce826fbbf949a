package nodeup

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the nodeup binary the tests that run it built (nodeupBinary), once every test is done: they
// share it, whichever runs first, and -count=N runs them again.
func TestMain(m *testing.M) {
	code := m.Run()
	if built {
		if bin, err := nodeupBinary(); err == nil {
			os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}
