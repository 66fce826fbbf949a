package main

import (
	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
)

func newDeleteCommand(g *globals) *cobra.Command {
	del := &cobra.Command{
		Use:   "delete",
		Short: "Delete a resource: a cluster or an instance group",
	}
	var o cloudup.DeleteOptions
	var name clusterName
	cmd := &cobra.Command{
		Use:   "cluster NAME [--yes]",
		Short: "Delete a cluster: its cloud resources, then its state",
		Long: `Find what the cluster owns in the cloud by its tags (volumes tagged kubernetes.io/cluster/NAME=owned, DNS
records under NAME but not under another cluster of the store named under it, in the zone file the spec names
and in the one the last update wrote if the spec names another since) and its objects in the state store. Without --yes, list them and delete nothing. With --yes,
delete the cloud resources, then the state, the cluster's spec last, so that an interrupted delete can be run
again. delete --yes holds the cluster's lock as update --yes does (see "kubeup update cluster").

A cluster whose spec cannot be read (corrupt, or written by a newer kubeup) can be deleted too: its cloud is
then found from the complete spec its last update applied; with none, no update applied it, and only its state
is deleted. The report says which.`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n, err := name.required(cmd, args)
			if err != nil {
				return err
			}
			if err := checkLockFlags(o.Lock, o.Apply, "delete the cluster"); err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			o.Out, o.Lock.Messages = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return cs.Delete(ctx, n, o)
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().BoolVarP(&o.Apply, "yes", "y", false, "delete (without it, only list what would be deleted)")
	lockFlags(cmd, &o.Lock)
	del.AddCommand(cmd, newDeleteInstanceGroupCommand(g))
	return del
}
