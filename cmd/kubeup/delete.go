package main

import (
	"github.com/spf13/cobra"
)

func newDeleteCommand(g *globals) *cobra.Command {
	del := &cobra.Command{
		Use:   "delete",
		Short: "Delete a resource: a cluster",
	}
	var yes bool
	cmd := &cobra.Command{
		Use:   "cluster NAME [--yes]",
		Short: "Delete a cluster: its cloud resources, then its state",
		Long: `Find what the cluster owns in the cloud by its tags (volumes tagged kubernetes.io/cluster/NAME=owned, DNS
records under NAME but not under another cluster of the store named under it) and its objects in the state
store. Without --yes, list them and delete nothing. With --yes,
delete the cloud resources, then the state, the cluster's config last, so that an interrupted delete can be run
again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			return cs.Delete(ctx, args[0], yes, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete (without it, only list what would be deleted)")
	del.AddCommand(cmd)
	return del
}
