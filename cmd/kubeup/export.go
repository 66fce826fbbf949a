package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

func newExportCommand(g *globals) *cobra.Command {
	export := &cobra.Command{
		Use:   "export",
		Short: "Export what other tools need to reach a cluster: a kubeconfig",
	}
	var o cloudup.ExportOptions
	var name clusterName
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME [--admin=DURATION]",
		Short: "Write a kubeconfig with a new admin certificate for the cluster, and make it kubectl's current context",
		Long: `Issue a new admin client certificate for the cluster (CN ` + model.AdminUser + `, O ` + model.AdminGroup + `: cluster-admin),
signed by the cluster's Kubernetes CA from the state store and valid for --admin (default 18h, at most 720h), and
merge a kubeconfig for it into the file kubectl reads first: --kubeconfig, else the first path of $KUBECONFIG, else
~/.kube/config. The API is reached at https://<spec.api.publicName> (with :<spec.kubeAPIServer.securePort> when
it is not 443), trusting the Kubernetes CA.

The kubeconfig gets a cluster and a context named after the cluster and a user <cluster>-admin, which replace the
entries of those names; every other cluster, user, context and field is kept. The context becomes the current
context. The file is written atomically, mode 0600 (its directory made 0700 when missing), under kubectl's lock
file <file>.lock. Keys are written in sorted order and comments are not kept, as kubectl writes it. A file that
does not parse as a kubeconfig is left as it is, and nothing is written.

The certificate and its key are not stored anywhere else, and never printed. It cannot be revoked: when it ends,
export again. The cluster must have been applied ("kubeup update cluster NAME --yes"), which makes its CA.`,
		Example: `  kubeup export kubeconfig demo.example.com
  kubeup export kubeconfig demo.example.com --admin=1h
  KUBECONFIG=$PWD/demo.kubeconfig kubeup export kubeconfig demo.example.com && kubectl get nodes`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 && cmd.Flags().Changed("admin") {
				if _, err := time.ParseDuration(args[1]); err == nil {
					return fmt.Errorf("--admin takes its value after '=': --admin=%s", args[1])
				}
			}
			return name.args(cmd, args)
		},
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
			e, err := cs.ExportKubeconfig(ctx, n, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote kubeconfig %s: context %s (cluster %s, user %s, server %s) is the current context.\n",
				e.Path, e.Context, e.Cluster, e.User, e.Server)
			fmt.Fprintf(cmd.OutOrStdout(), "The admin certificate (CN %s, O %s) is valid until %s; export again then.\n",
				model.AdminUser, model.AdminGroup, e.NotAfter.UTC().Format(time.RFC3339))
			return nil
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().DurationVar(&o.AdminLifetime, "admin", cloudup.DefaultAdminLifetime,
		"how long the admin certificate is valid: above 0, at most "+cloudup.MaxAdminLifetime.String()+"; the value goes after '=' (--admin alone is the default)")
	cmd.Flags().Lookup("admin").NoOptDefVal = cloudup.DefaultAdminLifetime.String()
	cmd.Flags().StringVar(&o.Path, "kubeconfig", "",
		"the kubeconfig file to merge into (default: the first path of $"+cloudup.EnvKubeconfig+", else ~/.kube/config)")
	export.AddCommand(cmd)
	return export
}
