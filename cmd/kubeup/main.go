// Command kubeup is the operator's tool: it creates, changes, updates and deletes kubeup clusters kept in a
// state store.
//
// It is a thin main: flag wiring only. The work is done by cloudup and model.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/version"
	"kubeup.dev/kubeup/statestore"
	_ "kubeup.dev/kubeup/statestore/gsstore" // the state store's gs:// scheme
	_ "kubeup.dev/kubeup/statestore/s3store" // the state store's s3:// scheme
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root := newRootCommand()
	if err := root.ExecuteContext(ctx); err != nil {
		var status exitStatus
		if !errors.As(err, &status) {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		}
		os.Exit(exitCode(err))
	}
}

// exitStatus is the error of a command that succeeded but must exit with another status than 0: update
// --detailed-exitcode's 2, "changes are pending". main prints no message for it.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// exitCode is the status kubeup exits with after err: 0 for none, an exitStatus's own, 1 for any other error.
func exitCode(err error) int {
	var status exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	}
	return 1
}

// globals are the flags every command has.
type globals struct {
	state   string
	verbose bool
}

// clusters opens the state store the flags (or $KUBEUP_STATE_STORE) name, which must exist: a command that reads
// a store that is not there (a typo in --state) fails, naming it, rather than find nothing in it.
func (g *globals) clusters(ctx context.Context) (*cloudup.Clusters, error) {
	return g.open(ctx, false)
}

// clustersToCreate is clusters for create, which makes a file:// store's directory when it does not exist. A
// bucket it does not make: a missing one is an error, as for every other command.
func (g *globals) clustersToCreate(ctx context.Context) (*cloudup.Clusters, error) {
	return g.open(ctx, true)
}

func (g *globals) open(ctx context.Context, create bool) (*cloudup.Clusters, error) {
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
	if err := store.Check(ctx); err != nil {
		if !errors.Is(err, statestore.ErrNoStore) {
			return nil, err
		}
		if !create || !statestore.CreatesRoot(store) {
			return nil, fmt.Errorf("%w: check --state (or $%s); `kubeup create cluster` makes a file:// store's directory, never a bucket",
				err, statestore.EnvStateStore)
		}
	}
	return &cloudup.Clusters{Store: store}, nil
}

// lockFlags adds the flags of a command that takes the cluster's lock (update --yes, delete --yes).
func lockFlags(cmd *cobra.Command, o *cloudup.LockOptions) {
	cmd.Flags().DurationVar(&o.Timeout, "lock-timeout", 10*time.Minute,
		"with --yes: how long to wait for the cluster's lock while another update or delete of it runs (0: until interrupted; a negative duration is refused)")
	cmd.Flags().StringVar(&o.ForceUnlock, "force-unlock", "",
		"with --yes (refused without): take over the cluster's lock with this ID (shown while waiting for it) from a run that died on another machine")
	if cmd.Flags().Lookup("force") == nil { // rolling-update's --force is another's: there, a live holder is stopped
		o.ForceFlag = "--force"
		cmd.Flags().BoolVar(&o.Force, "force", false,
			"with --force-unlock: take the lock even from a run that still runs on this machine (refused without)")
	}
}

// checkLockFlags refuses the lock flags' mistakes before anything is read: a negative --lock-timeout (it was
// taken as 0, wait until interrupted), and --force-unlock without --yes, which takes no lock and so would
// silently take over none. doing is what --yes does ("apply the changes").
func checkLockFlags(o cloudup.LockOptions, apply bool, doing string) error {
	if o.Timeout < 0 {
		return fmt.Errorf("--lock-timeout %s: a wait cannot be negative: give how long to wait for the cluster's lock (such as 10m), or 0 to wait until interrupted; nothing was changed", o.Timeout)
	}
	if o.Force && o.ForceUnlock == "" {
		return fmt.Errorf("--force goes with --force-unlock ID: it lets --force-unlock take the lock of a run that still runs on this machine; nothing was changed")
	}
	if o.ForceUnlock != "" && !apply {
		return fmt.Errorf("--force-unlock %s takes over the cluster's lock, and only --yes takes the lock (a dry run neither waits for it nor takes it): "+
			"add --yes to take over lock %s and %s, or leave --force-unlock out to only see what would change; nothing was changed",
			o.ForceUnlock, o.ForceUnlock, doing)
	}
	return nil
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

The state store is --state, else $KUBEUP_STATE_STORE, else file://$HOME/.kubeup/state. It must exist: every
command fails on a store that is not there (a typo in --state), naming it, rather than find nothing in it;
"kubeup create cluster" alone makes a file:// store's directory. A bucket (s3://, gs://) is never made: create
it first.`,
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
		newExportCommand(g),
		newValidateCommand(g),
		newRollingUpdateCommand(g),
		newAssetsCommand(g),
		version.Command("kubeup"),
	)
	// Made now rather than by Execute, so that requireSubcommand covers it too. Its commands keep the writer
	// they are made with: give them one that writes where the root's output is when they run.
	root.SetHelpCommand(helpCommand(root))
	root.SetOut(rootOut{root})
	root.InitDefaultCompletionCmd()
	root.SetOut(nil)
	requireSubcommand(root)
	return root
}

// rootOut writes to the root command's output as it is at the time of the write (SetOut may change it after the
// commands are made).
type rootOut struct{ root *cobra.Command }

func (w rootOut) Write(p []byte) (int, error) { return w.root.OutOrStdout().Write(p) }
