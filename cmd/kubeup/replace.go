package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/model"
)

func newReplaceCommand(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "replace -f FILE",
		Short: "Replace a cluster's spec (and instance groups) with those in a file",
		Long: `Replace a cluster's spec with the Cluster in FILE ("-" for stdin), and each InstanceGroup the file holds;
instance groups the file does not hold are kept. The whole result is validated first: every problem is listed
with its field path, and nothing is written. The cloud is not changed until "kubeup update cluster NAME --yes".`,
		Example: `  kubeup get cluster demo.example.com -o yaml > demo.yaml
  $EDITOR demo.yaml
  kubeup replace -f demo.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if file == "" {
				return fmt.Errorf("-f is required: the file holding the Cluster (\"-\" for stdin)")
			}
			var data []byte
			var err error
			if file == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return err
			}
			objs, err := model.Decode(file, data)
			if err != nil {
				return err
			}
			if objs.Cluster == nil {
				return fmt.Errorf("%s: no Cluster in the file: replace needs the cluster's spec", file)
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			s, err := cs.Get(ctx, objs.Cluster.Metadata.Name)
			if err != nil {
				return err
			}
			if err := cs.Replace(ctx, file, s, objs.Cluster, objs.InstanceGroups); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Replaced the spec of cluster %s. Review the changes: kubeup update cluster %s\n",
				objs.Cluster.Metadata.Name, objs.Cluster.Metadata.Name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file holding the Cluster and InstanceGroups (\"-\" for stdin)")
	return cmd
}
