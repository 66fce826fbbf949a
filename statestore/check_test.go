package statestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFile: a file where the store's directory should be is an error, but not ErrNoStore. (Check of a
// missing or existing directory is in storetest's contract.)
func TestCheckFile(t *testing.T) {
	ctx := context.Background()
	t.Run("file is not a directory", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "state")
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		err := mustOpen(t, f).Check(ctx)
		if err == nil || errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "state store file://"+f+": "+f+" is not a directory") {
			t.Errorf("Check of a file = %v, want that it is not a directory", err)
		}
	})
}
