package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
)

func newRollingUpdateCommand(g *globals) *cobra.Command {
	rolling := &cobra.Command{
		Use:   "rolling-update",
		Short: "Replace the machines whose configuration is not their instance group's current one",
	}
	var name clusterName
	var o cloudup.RollingOptions
	cmd := &cobra.Command{
		Use:   "cluster NAME [--yes] [--instance-group NAME] [--force] [--cloudonly]",
		Short: "List, then with --yes replace one at a time, the machines that do not run their group's current configuration",
		Long: `List the machines of the cluster's instance groups whose configuration is not their group's current one:
on aws, machines launched from another launch template version than the one their Auto Scaling group launches
(every change of an instance group that "kubeup update cluster --yes" applies makes a new version); on gce,
machines made from another instance template than their managed instance group's; on the local provider,
machines recorded by nodeup beside the volume pool whose node configuration sha256 is not their group's in the
state store. A table
per instance group (NAME STATUS NEEDUPDATE READY MIN TARGET MAX), then one line per such machine with the reason.

With --yes, replace them one at a time, control-plane groups first, then the nodes: the machine is terminated
in its group without lowering the group's desired capacity, and the group launches its replacement (local:
the machine's nodeup runs again with its group's configuration, then two of protokube's rounds are waited
for). Before a
control-plane machine is taken down, every etcd cluster must keep its quorum of healthy members without the
members that machine runs, and before any machine the cluster must validate; the log says what each check was
based on. After, the group must have its target of machines in service again, every etcd member healthy (the
replacement's protokube claims the member's volume) and the cluster validate, before the next machine. The
first failure stops the update before anything more is taken down. --force replaces every machine, up to date
or not. --instance-group (repeatable) limits the update to those groups.

The checks are validate cluster's, through the API with the kubeconfig of "kubeup export kubeconfig" and
through etcd's /health. --cloudonly takes them from the cloud instead (machines in service, etcd member
volumes attached to them: what protokube claims; local: the pool's volume claims), for a cluster whose API
cannot be reached.

A replacing run holds the cluster's lock, as update --yes does.`,
		Example: `  kubeup rolling-update cluster demo.example.com
  kubeup rolling-update cluster demo.example.com --yes
  kubeup rolling-update cluster demo.example.com --instance-group nodes --yes`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n, err := name.required(cmd, args)
			if err != nil {
				return err
			}
			if err := checkLockFlags(o.Lock, o.Apply, "replace the machines"); err != nil {
				return err
			}
			for _, d := range []struct {
				flag string
				v    time.Duration
			}{{"--validation-timeout", o.Timeout}, {"--interval", o.Interval}} {
				if d.v < 0 {
					return fmt.Errorf("%s %s: a duration cannot be negative; nothing was changed", d.flag, d.v)
				}
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			// A rolling update says what it checks and does at every step: info, not only warnings.
			level := slog.LevelInfo
			if g.verbose {
				level = slog.LevelDebug
			}
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			o.Lock.Messages = cmd.ErrOrStderr()
			return cs.RollingUpdate(ctx, n, o)
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().BoolVarP(&o.Apply, "yes", "y", false, "replace the machines (without it: only list them)")
	cmd.Flags().StringSliceVar(&o.InstanceGroups, "instance-group", nil, "only the machines of this instance group (repeatable)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "replace every machine, up to date or not")
	cmd.Flags().BoolVar(&o.CloudOnly, "cloudonly", false, "base the health checks on the cloud alone, not on the API and etcd")
	kubeconfigFlag(cmd, &o.Kubeconfig)
	cmd.Flags().DurationVar(&o.Timeout, "validation-timeout", 15*time.Minute, "how long to wait for each replacement to be in service and the cluster healthy")
	cmd.Flags().DurationVar(&o.Interval, "interval", 10*time.Second, "how often to look while waiting for a replacement")
	lockFlags(cmd, &o.Lock)
	rolling.AddCommand(cmd)
	return rolling
}
