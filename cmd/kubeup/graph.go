package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
)

func newGraphCommand(g *globals) *cobra.Command {
	var role string
	var name clusterName
	cmd := &cobra.Command{
		Use:   "graph NAME [--role control-plane|node]",
		Short: "Print a cluster's task graph in DOT",
		Long: `Print the task graph of a cluster in Graphviz's DOT language, edges from each task to what it depends on:
the cloud graph that "kubeup update cluster" runs, or with --role the node graph that nodeup runs on a node of
the first instance group with that role.`,
		Example: `  kubeup graph demo.example.com | dot -Tsvg > cloud.svg
  kubeup graph demo.example.com --role control-plane | dot -Tsvg > control-plane.svg`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n, err := name.required(cmd, args)
			if err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			s, err := cs.Get(ctx, n)
			if err != nil {
				return err
			}
			c, igs, err := cs.Complete(s)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if role == "" {
				return cloudup.WriteCloudGraph(out, c, igs)
			}
			// The instance groups' spelling (spec.role) is taken too.
			want := map[string]string{"control-plane": model.RoleControlPlane, "node": model.RoleNode,
				model.RoleControlPlane: model.RoleControlPlane, model.RoleNode: model.RoleNode}[role]
			if want == "" {
				return fmt.Errorf("--role %s: want control-plane or node (or an instance group's role, ControlPlane or Node)", model.Echo(role))
			}
			for _, ig := range igs {
				if ig.Spec.Role != want {
					continue
				}
				nc := model.NewNodeConfig(c, ig)
				// The keystore's files the role receives, their contents left pending: the graph shows its tasks.
				if err := nc.AddKeystoreFiles(model.Issued{}); err != nil {
					return err
				}
				graph, err := nodegraph.BuildNodeGraph(nc)
				if err != nil {
					return err
				}
				return graph.WriteDOT(out)
			}
			return fmt.Errorf("cluster %s has no instance group with role %s", c.Metadata.Name, want)
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().StringVar(&role, "role", "", "print the node graph of this role instead: control-plane or node")
	return cmd
}
