package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/model"
)

func newGetCommand(g *globals) *cobra.Command {
	get := &cobra.Command{
		Use:   "get",
		Short: "Show clusters and instance groups",
	}
	get.AddCommand(newGetClusterCommand(g), newGetInstanceGroupsCommand(g))
	return get
}

func newGetClusterCommand(g *globals) *cobra.Command {
	var full bool
	var output string
	cmd := &cobra.Command{
		Use:     "cluster [NAME]",
		Aliases: []string{"clusters"},
		Short:   "List the clusters, or show one",
		Long: `Without NAME, list the clusters in the state store. With NAME, show that cluster: a table, or its spec with
-o yaml or -o json. --full shows the complete spec, every default filled in, as "kubeup update cluster" uses it.`,
		Example: `  kubeup get clusters
  kubeup get cluster demo.example.com --full -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := checkOutput(output, "table", "yaml", "json"); err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			var names []string
			if len(args) == 1 {
				names = args
			} else if names, err = cs.List(ctx); err != nil {
				return err
			}
			clusters := []any{}
			var rows [][]string
			for _, name := range names {
				s, err := cs.Get(ctx, name)
				if err != nil {
					return err
				}
				c := s.Cluster
				if full {
					if c, _, err = cs.Complete(s); err != nil {
						return err
					}
				}
				clusters = append(clusters, c)
				// The table shows the version the cluster runs: the complete spec's, defaulted when the user
				// spec leaves it out.
				complete, _ := model.Complete(s.Cluster, s.InstanceGroups)
				rows = append(rows, []string{c.Metadata.Name, c.Spec.CloudProvider, strings.Join(c.Spec.Zones, ","), complete.Spec.KubernetesVersion})
			}
			if output == "table" {
				return table(cmd.OutOrStdout(), []string{"NAME", "CLOUD", "ZONES", "KUBERNETES"}, rows)
			}
			return printObjects(cmd.OutOrStdout(), output, len(args) == 1, clusters...)
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "show the complete spec, with every default filled in")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	return cmd
}

func newGetInstanceGroupsCommand(g *globals) *cobra.Command {
	var name, output string
	var full bool
	cmd := &cobra.Command{
		Use:     "instancegroups --name CLUSTER",
		Aliases: []string{"instancegroup", "ig"},
		Short:   "List a cluster's instance groups",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if name == "" {
				return fmt.Errorf("--name is required: the cluster whose instance groups to list")
			}
			if err := checkOutput(output, "table", "yaml", "json"); err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			s, err := cs.Get(ctx, name)
			if err != nil {
				return err
			}
			igs := s.InstanceGroups
			if full {
				if _, igs, err = cs.Complete(s); err != nil {
					return err
				}
			}
			if output != "table" {
				return printObjects(cmd.OutOrStdout(), output, false, objects(nil, igs)...)
			}
			var rows [][]string
			for _, ig := range igs {
				rows = append(rows, []string{ig.Metadata.Name, ig.Spec.Role, ig.Spec.MachineType,
					size(ig.Spec.MinSize), size(ig.Spec.MaxSize), strings.Join(ig.Spec.Zones, ",")})
			}
			return table(cmd.OutOrStdout(), []string{"NAME", "ROLE", "MACHINETYPE", "MIN", "MAX", "ZONES"}, rows)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the cluster (required)")
	cmd.Flags().BoolVar(&full, "full", false, "show the complete specs, with every default filled in")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	return cmd
}

func size(p *int32) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(int(*p))
}
