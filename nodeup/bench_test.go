package nodeup

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// binaryReruns is how many times BenchmarkNodeupNoop runs the nodeup binary for ms-wall-binary.
const binaryReruns = 10

// BenchmarkNodeupNoop re-runs nodeup on a control-plane node's root that a first apply converged: the node's
// whole graph is read back (files, manifests, unit files: without systemd in the root, nodeup manages the unit
// files only) and nothing is changed. In control-plane, ms-wall is the wall time of one re-run in this process
// (Run, from reading the configuration to the report), B/op and allocs/op its allocations; ms-wall-binary is
// the wall time of the nodeup binary doing the same, process start included (the mean of binaryReruns runs):
// what an operator or a boot sees; cpu-ms-binary its user + system time, which a busy machine does not inflate.
func BenchmarkNodeupNoop(b *testing.B) {
	conf := writeConf(b, b.TempDir(), "control-plane-a", nodeConfig(b, "control-plane-a"))
	root := b.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if r := run(b, Options{Conf: conf, Root: root, Logger: quiet}); r.runErr != nil {
		b.Fatalf("first apply: %v\n%s", r.runErr, r.err)
	}
	applied := treeHash(b, root)

	bin := filepath.Join(e2e.BuildBinaries(b, "kubeup.dev/kubeup/cmd/nodeup"), "nodeup")
	var binaryWall, binaryCPU time.Duration
	for i := 0; i < binaryReruns; i++ {
		cmd := exec.Command(bin, "--conf="+conf, "--root="+root)
		var out bytes.Buffer
		cmd.Stdout = &out
		start := time.Now()
		err := cmd.Run()
		binaryWall += time.Since(start)
		if cmd.ProcessState != nil {
			binaryCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if err != nil || out.String() != "No changes were needed\n" {
			b.Fatalf("nodeup binary, re-run %d: %v; printed:\n%s\nwant: No changes were needed", i, err, out.String())
		}
	}

	b.Run("control-plane", func(b *testing.B) {
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
		b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "ms-wall")
		b.ReportMetric(float64(binaryWall.Microseconds())/1000/binaryReruns, "ms-wall-binary")
		b.ReportMetric(float64(binaryCPU.Microseconds())/1000/binaryReruns, "cpu-ms-binary")
	})
	if got := treeHash(b, root); got != applied {
		b.Fatalf("the re-runs changed the tree:\nbefore:\n%s\nafter:\n%s", applied, got)
	}
}
