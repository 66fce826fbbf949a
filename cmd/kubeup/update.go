package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

func newUpdateCommand(g *globals) *cobra.Command {
	update := &cobra.Command{
		Use:   "update",
		Short: "Bring a cluster's cloud resources and addons in line with its spec",
	}
	var yes, detailed bool
	var target, output string
	var lock cloudup.LockOptions
	var kubeconfig string
	var name clusterName
	cmd := &cobra.Command{
		Use:   "cluster NAME [--yes]",
		Short: "Show, then with --yes apply, the changes that bring the cloud in line with the spec",
		Long: `Build the cluster's task graph from its complete spec (volumes for every etcd member, the API's DNS
records, the complete spec and each instance group's node configuration in the state store) and compare it
with the cloud. Without --yes, print what would change ("Will create resources", "Will modify resources")
and change nothing. With --yes, apply those changes. --target dryrun is the same dry run as leaving out --yes;
with --yes it is refused, as the two contradict each other.

update --yes holds the cluster's lock (the object <cluster>/lock of the state store) from its dry run to its
end, so that two runs never change the cloud at once: a second update --yes (or delete --yes) waits for the
first, saying every few seconds who holds the lock and since when, then finds what the first did. It waits up
to --lock-timeout, or until interrupted. A lock whose process is gone is taken over when that process ran on
this machine; when a run died on another machine, take its lock over with --force-unlock ID, the ID the
waiting message shows.

Then the addons (spec.addons: CoreDNS), which live in the cluster: through its API, with the kubeconfig of
"kubeup export kubeconfig NAME" (its context named after the cluster; --kubeconfig, else the first path of
$KUBECONFIG, else ~/.kube/config), their objects are compared by server-side apply's fields and applied after
the cloud, in the same plan ("KubeObject/Deployment/kube-system/coredns"); objects kubeup labelled
kubeup.dev/addon=<addon> that the spec no longer asks for (a disabled addon's) are listed under "Will delete
resources" and deleted; no other object is ever deleted or taken over. When the kubeconfig has no such context,
or the API does not answer within a few seconds (a cluster not up yet), the update goes on without them and its
report ends with a line "Addons wait: <why>. ..." that says how to apply them (on stderr with -o json).

When spec.local.zoneFile changed since the last update --yes (or spec.dnsZone, which its default names), the
cluster's DNS records move: the dry run lists those it will remove from the old file before its plan (on
stderr with -o json), and --yes removes them, then writes them to the new file. Other clusters' records in the
old file stay.

Exit status: 0 on success (with or without changes to make), 1 on an error. With --detailed-exitcode, as
terraform plan -detailed-exitcode: 0 when there is nothing to change, 2 when the dry run found changes, 1 on
an error; with --yes, 0 after a successful apply (as terraform apply).`,
		Example: `  kubeup update cluster demo.example.com
  kubeup update cluster demo.example.com --yes
  kubeup update cluster demo.example.com -o json
  kubeup update cluster demo.example.com --detailed-exitcode >/dev/null; echo $?   # 0, 1 or 2`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n, err := name.required(cmd, args)
			if err != nil {
				return err
			}
			o := cloudup.UpdateOptions{Out: cmd.OutOrStdout(), Logger: g.logger(cmd.ErrOrStderr()), Lock: lock, Kubeconfig: kubeconfig}
			o.Lock.Messages = cmd.ErrOrStderr()
			if g.verbose {
				o.Progress = cmd.ErrOrStderr()
			}
			switch target {
			case "direct":
				o.Apply = yes
			case "dryrun":
				if yes {
					// As terraform plan, which has no -auto-approve: a run that was asked to apply must not end
					// with success and a plan that says "Must specify --yes".
					return fmt.Errorf("--target dryrun only shows the changes and --yes applies them: give one of them "+
						"(show: kubeup update cluster %s; apply: kubeup update cluster %s --yes); nothing was changed", n, n)
				}
			default:
				return fmt.Errorf("--target %s: want direct or dryrun", model.Echo(target))
			}
			if err := checkLockFlags(lock, o.Apply, "apply the changes"); err != nil {
				return err
			}
			switch output {
			case "text":
			case "json":
				o.JSON = true
			default:
				return fmt.Errorf("-o %s: want text or json", model.Echo(output))
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			if s, err := cs.Get(ctx, n); err == nil {
				warn(cmd, s.Cluster)
				warnAssets(cmd, cs, s)
			}
			plan, err := cs.Update(ctx, n, o)
			if err != nil {
				return err
			}
			if detailed && !o.Apply && !plan.Empty() {
				return exitStatus(2)
			}
			return nil
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply the changes (without it, only show them)")
	cmd.Flags().StringVar(&target, "target", "direct", "direct: change the cloud (with --yes); dryrun: only show the changes (refused with --yes)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "report format: text or json")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when the dry run found changes, 0 when none, 1 on an error")
	lockFlags(cmd, &lock)
	kubeconfigFlag(cmd, &kubeconfig)
	update.AddCommand(cmd)
	return update
}
