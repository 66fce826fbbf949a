package nodeup

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkNodeupNoop re-runs nodeup (Run, in this process) on a control-plane node's root that a first apply
// converged: the node's whole graph is read back (files, manifests, unit files: without systemd in the root,
// nodeup manages the unit files only) and nothing is changed. ms-wall is the wall time of one re-run, from
// reading the configuration to the report; B/op and allocs/op are one re-run's allocations.
func BenchmarkNodeupNoop(b *testing.B) {
	conf := writeConf(b, b.TempDir(), "control-plane-a", nodeConfig(b, "control-plane-a"))
	root := b.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if r := run(b, Options{Conf: conf, Root: root, Logger: quiet}); r.runErr != nil {
		b.Fatalf("first apply: %v\n%s", r.runErr, r.err)
	}
	applied := treeHash(b, root)
	ctx := context.Background()
	var out bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := Run(ctx, Options{Conf: conf, Root: root, Out: &out, Err: io.Discard, Logger: quiet}); err != nil {
			b.Fatalf("re-run %d: %v", i, err)
		}
		if out.String() != "No changes were needed\n" {
			b.Fatalf("re-run %d printed:\n%s\nwant: No changes were needed", i, out.String())
		}
	}
	wall := time.Since(start)
	b.StopTimer()
	if got := treeHash(b, root); got != applied {
		b.Fatalf("the re-runs changed the tree:\nbefore:\n%s\nafter:\n%s", applied, got)
	}
	b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "ms-wall")
}
