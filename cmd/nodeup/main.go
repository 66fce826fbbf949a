// Command nodeup is run on every node at boot to converge it: files, static-pod manifests, systemd units.
//
// It is a thin main: flag wiring only. The work is done by package nodeup.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/internal/version"
	"kubeup.dev/kubeup/nodeup"
	_ "kubeup.dev/kubeup/statestore/gsstore" // the state store's gs:// scheme
	_ "kubeup.dev/kubeup/statestore/s3store" // the state store's s3:// scheme
)

func main() {
	// systemd stops the unit with SIGTERM: stop between tasks rather than in the middle of one.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs nodeup with args and returns the exit code: 0, or 1 after printing "Error: ..." to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

func newRootCommand() *cobra.Command {
	var (
		o       nodeup.Options
		verbose bool
	)
	root := &cobra.Command{
		Use:   "nodeup --conf PATH|URL [--conf-sha256 HEX] [--dryrun] [--root DIR] [--retries N] [--install-systemd-unit]",
		Short: "Converge a node at boot: files, static-pod manifests, systemd units",
		Long: `nodeup runs on every node at boot: it loads the node's configuration (written by
` + "`kubeup update cluster --yes`" + ` to <state store>/<cluster>/nodeup/<instance group>), verifies it against the
sha256 on its first line, validates it, and converges the machine to it: kubelet's flags and unit, the static-pod
manifests and, on the control plane, protokube. Only what differs is changed; a service restarts only when what it
runs changed. Nothing is changed when the configuration is missing or invalid; one that does not match its sha256
(a copy still being written) is read again for up to 2m before it is refused.

--conf-sha256 pins the machine to one configuration: the one its launch template's user data names. Another
one in the store (written after the launch template) is refused, changing nothing: run
` + "`kubeup update cluster --yes`" + `, then replace the machine. The pin is the first boot's: the unit
--install-systemd-unit installs runs nodeup without it at every later boot.

--dryrun prints what would change and changes nothing. Results go to stdout, logs to stderr.`,
		Example: `  nodeup --conf=s3://state/demo.example.com/nodeup/control-plane-a --conf-sha256=HEX --install-systemd-unit
  nodeup --conf=/var/lib/kubeup/nodeup.conf --root=/tmp/n --dryrun`,
		Args:              cobra.NoArgs,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.Err = cmd.OutOrStdout(), cmd.ErrOrStderr()
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			o.Logger = slog.New(slog.NewTextHandler(o.Err, &slog.HandlerOptions{Level: level}))
			return nodeup.Run(cmd.Context(), o)
		},
	}
	f := root.Flags()
	f.StringVar(&o.Conf, "conf", "", "the node configuration: a path, file:///path, s3://bucket/key or gs://bucket/key; one object, its first line \"# sha256:<hex of the rest>\"")
	f.StringVar(&o.ConfSHA256, "conf-sha256", "", "refuse, changing nothing, a configuration whose sha256 (its first line's) is not this one: the one the machine was launched for (its user data names it)")
	f.BoolVar(&o.DryRun, "dryrun", false, "print what would change; change nothing")
	f.StringVar(&o.Root, "root", "/", "the node's filesystem root: converge this directory tree instead of /")
	f.IntVar(&o.Retries, "retries", 0, "retry a failed run up to N times, with backoff (-1: until it succeeds); a bad configuration is never retried (one still being copied is waited for, whatever N)")
	f.BoolVar(&o.InstallSystemdUnit, "install-systemd-unit", false,
		"also install nodeup as "+nodeup.InstalledBinary+" and the oneshot unit "+nodeup.UnitName+" that runs it with --conf at every boot")
	f.StringVar(&o.NodeID, "node-id", "", "this machine's id, as protokube's --node-id (default: the host name); on the local provider nodeup records the machine under it for kubeup rolling-update")
	f.BoolVarP(&verbose, "verbose", "v", false, "log at debug level")
	root.AddCommand(version.Command("nodeup"))
	return root
}
