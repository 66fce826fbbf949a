package nodetasks

import (
	"flag"
	"io"
	"log/slog"
	"os"
	"testing"
)

// TestMain keeps the tasks' logs (what each Render changed) out of the test output unless -v asks for them.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}
