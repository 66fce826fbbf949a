// Command kubeup is the operator's tool: it creates, changes, updates and deletes kubeup clusters kept in a
// state store.
//
// It is a thin main: flag wiring only. The work is done by cloudup and model.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/cloudup/statestore"
	"kubeup.dev/kubeup/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root := newRootCommand()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

// globals are the flags every command has.
type globals struct {
	state   string
	verbose bool
}

// clusters opens the state store the flags (or $KUBEUP_STATE_STORE) name.
func (g *globals) clusters(ctx context.Context) (*cloudup.Clusters, error) {
	u := g.state
	if u == "" {
		var err error
		if u, err = statestore.DefaultURL(); err != nil {
			return nil, err
		}
	}
	store, err := statestore.Open(ctx, u)
	if err != nil {
		return nil, err
	}
	return &cloudup.Clusters{Store: store}, nil
}

// logger writes structured logs to stderr: warnings only, unless --verbose.
func (g *globals) logger(stderr io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if g.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

func newRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "kubeup",
		Short: "Create, update and delete Kubernetes clusters from a cluster spec",
		Long: `kubeup is the operator's tool: it keeps cluster specs in a state store, expands them into a graph of
idempotent tasks, and runs them after a dry run that shows every change.

The state store is --state, else $KUBEUP_STATE_STORE, else file://$HOME/.kubeup/state.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.state, "state", "",
		"state store URL: file:///dir, s3://bucket/prefix or gs://bucket/prefix (default $"+statestore.EnvStateStore+", else file://$HOME/.kubeup/state)")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log every task's progress to stderr")

	root.AddCommand(
		newCreateCommand(g),
		newGetCommand(g),
		newEditCommand(g),
		newReplaceCommand(g),
		newUpdateCommand(g),
		newDeleteCommand(g),
		newGraphCommand(g),
		version.Command("kubeup"),
	)
	return root
}
