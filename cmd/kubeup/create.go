package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/model"
)

func newCreateCommand(g *globals) *cobra.Command {
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a resource: a cluster",
	}
	create.AddCommand(newCreateClusterCommand(g))
	return create
}

func newCreateClusterCommand(g *globals) *cobra.Command {
	var o model.NewClusterOptions
	var dryRun bool
	var output string
	cmd := &cobra.Command{
		Use:   "cluster --name NAME --cloud local|aws|gce --zones Z1,Z2,...",
		Short: "Write a new cluster's spec to the state store",
		Long: `Write a new cluster's spec and instance groups to the state store: one control-plane instance group per
control-plane node, spread over the zones, and a "nodes" group across all of them. Nothing runs in the cloud
until "kubeup update cluster NAME --yes".

With --dry-run, print the spec (-o yaml or json) instead of writing it.`,
		Example: `  kubeup create cluster --name demo.example.com --cloud local --zones a,b,c --control-plane-count 3
  kubeup create cluster --name prod.example.com --cloud aws --zones us-east-1a,us-east-1b,us-east-1c --dry-run -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if o.Name == "" {
				return fmt.Errorf("--name is required: the cluster's DNS name, for example demo.example.com")
			}
			if o.CloudProvider == "" {
				return fmt.Errorf("--cloud is required: local, aws or gce")
			}
			if err := checkOutput(output, "yaml", "json"); err != nil {
				return err
			}
			c, igs, err := model.NewCluster(o)
			if err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			if dryRun {
				c.Spec.ConfigBase = cs.Store.URL() + "/" + c.Metadata.Name
				full, fullIGs := model.Complete(c, igs)
				if err := model.Validate("create cluster", full, fullIGs); err != nil {
					return err
				}
				return printObjects(cmd.OutOrStdout(), output, false, objects(c, igs)...)
			}
			if err := cs.Create(ctx, "create cluster "+o.Name, c, igs); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Created cluster %s in %s with %d instance groups.\n", o.Name, cs.Store.URL(), len(igs))
			fmt.Fprintf(out, "  Review the changes: kubeup update cluster %s\n", o.Name)
			fmt.Fprintf(out, "  Apply them:         kubeup update cluster %s --yes\n", o.Name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the cluster's DNS name, e.g. demo.example.com (required)")
	f.StringVar(&o.CloudProvider, "cloud", "", "cloud provider: local, aws or gce (required)")
	f.StringSliceVar(&o.Zones, "zones", nil, "zones to run in, comma-separated (required)")
	f.IntVar(&o.ControlPlaneCount, "control-plane-count", 1, "control-plane nodes (and etcd members): 1, 3 or 5")
	f.IntVar(&o.NodeCount, "node-count", 1, "nodes in the \"nodes\" instance group; 0 leaves the group out")
	f.StringVar(&o.DNSZone, "dns-zone", "", "DNS zone of the cluster's records (default: the name's parent domain)")
	f.StringVar(&o.Project, "project", "", "GCP project (gce)")
	f.StringVar(&o.KubernetesVersion, "kubernetes-version", "", "Kubernetes version (default "+model.DefaultKubernetesVersion+")")
	f.BoolVar(&dryRun, "dry-run", false, "print the spec instead of writing it")
	f.StringVarP(&output, "output", "o", "yaml", "output format of --dry-run: yaml or json")
	return cmd
}
