// Command demo shows the engine converging a directory on this machine: a dry run that lists what would
// change, an apply, and a second dry run that must find nothing left to do.
//
//	go run ./internal/demo [--dir DIR]
//
// The reports go to stdout; narration, logs and progress to stderr. It exits non-zero when the second dry run
// is not empty.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"

	"kubeup.dev/kubeup/engine"
)

func main() {
	defaultDir := filepath.Join(os.TempDir(), "kubeup-demo")
	dir := flag.String("dir", defaultDir,
		"directory to converge; the default one is emptied first so that every demo starts from nothing, "+
			"a directory you name is used as it is")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *dir == defaultDir {
		if err := os.RemoveAll(*dir); err != nil {
			fmt.Fprintf(os.Stderr, "demo: emptying %s: %v\n", *dir, err)
			os.Exit(1)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dir, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// run converges dir: dry run, apply, dry run again. It fails when the second dry run still finds changes.
func run(ctx context.Context, dir string, stdout, stderr io.Writer) error {
	world := &Dir{Root: dir}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{ReplaceAttr: dropTime}))

	fmt.Fprintf(stderr, "converging %s\n== dry run: what would change\n", dir)
	if _, err := dryRun(ctx, world, logger, stdout); err != nil {
		return err
	}

	fmt.Fprintln(stderr, "== apply")
	res, err := engine.Run(ctx, demoGraph(), world,
		engine.Options{Target: engine.Apply, Logger: logger, Progress: stderr})
	if err != nil {
		return fmt.Errorf("applying: %w", err)
	}
	fmt.Fprintf(stderr, "applied %d changes\n", len(res.Plan.Changes))

	fmt.Fprintln(stderr, "== dry run again: nothing left to do")
	plan, err := dryRun(ctx, world, logger, stdout)
	if err != nil {
		return err
	}
	if !plan.Empty() {
		return errors.New("the dry run after apply still finds changes: a perpetual diff in a task's Find")
	}
	return nil
}

// dryRun runs the demo graph as a dry run and writes its report to w.
func dryRun(ctx context.Context, world *Dir, logger *slog.Logger, w io.Writer) (*engine.Plan, error) {
	res, err := engine.Run(ctx, demoGraph(), world, engine.Options{Target: engine.DryRun, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	if err := res.Plan.WriteText(w); err != nil {
		return nil, fmt.Errorf("writing the dry-run report: %w", err)
	}
	return res.Plan, nil
}

// demoGraph is a node's worth of files: a cluster config first, the files derived from it after it.
func demoGraph() *engine.Graph[*Dir] {
	g := engine.NewGraph[*Dir]()
	config := engine.Add(g, &DemoFile{
		Path:     "etc/kubeup/cluster.yaml",
		Contents: ptr("name: demo.example.com\nkubernetesVersion: 1.33.0\netcdMembers: [a]\n"),
		Mode:     ptr[os.FileMode](0o644),
	})
	env := engine.Add(g, &DemoFile{
		Path:     "etc/kubeup/node.env",
		Contents: ptr("CLUSTER_NAME=demo.example.com\nNODE_ROLE=control-plane\n"),
		Mode:     ptr[os.FileMode](0o600),
		After:    []*DemoFile{config},
	})
	etcd := engine.Add(g, &DemoFile{
		Path: "etc/kubernetes/manifests/etcd.yaml",
		Contents: ptr("apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd-a\n  namespace: kube-system\n" +
			"spec:\n  hostNetwork: true\n"),
		Mode:  ptr[os.FileMode](0o644),
		After: []*DemoFile{config},
	})
	apiserver := engine.Add(g, &DemoFile{
		Path: "etc/kubernetes/manifests/kube-apiserver.yaml",
		Contents: ptr("apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-apiserver\n  namespace: kube-system\n" +
			"spec:\n  hostNetwork: true\n"),
		After: []*DemoFile{etcd},
	})
	engine.Add(g, &DemoFile{
		Path:     "var/lib/kubeup/converged",
		Contents: ptr("demo.example.com\n"),
		Mode:     ptr[os.FileMode](0o640),
		After:    []*DemoFile{env, apiserver},
	})
	return g
}

func ptr[T any](v T) *T { return &v }

// dropTime leaves the time out of log lines: the demo's output reads better, and runs compare.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}
