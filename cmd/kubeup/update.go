package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/cloudup"
)

func newUpdateCommand(g *globals) *cobra.Command {
	update := &cobra.Command{
		Use:   "update",
		Short: "Bring a cluster's cloud resources in line with its spec",
	}
	var yes bool
	var target, output string
	cmd := &cobra.Command{
		Use:   "cluster NAME [--yes]",
		Short: "Show, then with --yes apply, the changes that bring the cloud in line with the spec",
		Long: `Build the cluster's task graph from its complete spec (volumes for every etcd member, the API's DNS
records, the complete spec and each instance group's node configuration in the state store) and compare it
with the cloud. Without --yes, print what would change ("Will create resources", "Will modify resources")
and change nothing. With --yes, apply those changes. The exit status is 0 when there is nothing to do.`,
		Example: `  kubeup update cluster demo.example.com
  kubeup update cluster demo.example.com --yes
  kubeup update cluster demo.example.com -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			o := cloudup.UpdateOptions{Out: cmd.OutOrStdout(), Logger: g.logger(cmd.ErrOrStderr())}
			if g.verbose {
				o.Progress = cmd.ErrOrStderr()
			}
			switch target {
			case "direct":
				o.Apply = yes
			case "dryrun":
			default:
				return fmt.Errorf("--target %q: want direct or dryrun", target)
			}
			switch output {
			case "text":
			case "json":
				o.JSON = true
			default:
				return fmt.Errorf("-o %q: want text or json", output)
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			_, err = cs.Update(ctx, args[0], o)
			return err
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply the changes (without it, only show them)")
	cmd.Flags().StringVar(&target, "target", "direct", "direct: change the cloud (with --yes); dryrun: only show the changes, even with --yes")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "report format: text or json")
	update.AddCommand(cmd)
	return update
}
