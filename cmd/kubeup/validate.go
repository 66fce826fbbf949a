package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

// kubeconfigFlag adds --kubeconfig, the file of `kubeup export kubeconfig` whose context named after the cluster
// reaches its API, to a command that reads it.
func kubeconfigFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "kubeconfig", "",
		"the kubeconfig of `kubeup export kubeconfig` (default: the first path of $"+cloudup.EnvKubeconfig+", else ~/.kube/config)")
}

func newValidateCommand(g *globals) *cobra.Command {
	validate := &cobra.Command{
		Use:   "validate",
		Short: "Check that a running cluster is healthy",
	}
	var name clusterName
	var wait time.Duration
	var output string
	var o cloudup.ValidateOptions
	cmd := &cobra.Command{
		Use:   "cluster NAME [--wait DURATION] [-o text|yaml|json]",
		Short: "Check through the API, etcd and DNS that every node, static pod and etcd member of a cluster is healthy",
		Long: `Check a running cluster, as kops validate cluster does:

  - every instance group has at least its minSize of nodes Ready (nodes are counted by their label
    ` + cloudup.NodeLabelInstanceGroup + `=<instance group>, which nodeup gives kubelet);
  - every Ready control-plane node runs kube-apiserver, kube-controller-manager and kube-scheduler (their mirror
    pods in kube-system are Running), and etcd for each member whose DNS name points at it;
  - every etcd member of the spec answers healthy on /health at its DNS name and client port
    (https://<member>.etcd-<etcd cluster>.internal.<cluster>:<clientPort>), with kube-apiserver's etcd client
    certificate from the state store's keystore;
  - the API's names and the members' names resolve, only to addresses of Ready control-plane nodes.

Warnings do not fail validation: on aws and gce, that kubelets bootstrap with the cluster's shared bootstrap
token and no proof of their machine's identity, and a control plane that shares the nodes' cloud identity
(docs/pki.md).

The API is reached with the kubeconfig of "kubeup export kubeconfig NAME" (its context named after the cluster):
--kubeconfig, else the first path of $KUBECONFIG, else ~/.kube/config.

Each failure is one line naming the object and what is wrong. An asset of the spec without a sha256 (which no
node installs: see kubeup assets mirror) is a warning on stderr, not a failure: a node whose image carries
the file runs it all the same, and one that lacks it fails the checks above. With --wait, validation runs again every 10
seconds until the cluster is healthy or the duration ends; the last result is printed.

Exit status: 0 when every check holds; 1 when one does not, or when validation could not run.`,
		Example: `  kubeup validate cluster demo.example.com
  kubeup validate cluster demo.example.com --wait 10m
  kubeup validate cluster demo.example.com -o json | jq '.failures[]'`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n, err := name.required(cmd, args)
			if err != nil {
				return err
			}
			if wait < 0 {
				return fmt.Errorf("--wait %s: a wait cannot be negative: give how long to keep validating (such as 10m), or 0 to validate once", wait)
			}
			switch output {
			case "text", "yaml", "json":
			default:
				return fmt.Errorf("-o %s: want text, yaml or json", model.Echo(output))
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			if s, err := cs.Get(ctx, n); err == nil {
				warnAssets(cmd, cs, s)
			}
			log := g.logger(cmd.ErrOrStderr())
			deadline := time.Now().Add(wait)
			var val *cloudup.Validation
			for {
				if val, err = cs.ValidateCluster(ctx, n, o); err != nil {
					return err
				}
				if val.Healthy || !time.Now().Add(10*time.Second).Before(deadline) {
					break
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s is not healthy yet (%d failures, first: %s); validating again in 10s\n",
					n, len(val.Failures), val.Failures[0])
				log.Debug("validation failed", "failures", len(val.Failures))
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(10 * time.Second):
				}
			}
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				b, err := json.MarshalIndent(val, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
			case "yaml":
				b, err := yaml.Marshal(val)
				if err != nil {
					return err
				}
				out.Write(b)
			default:
				if err := val.WriteText(out); err != nil {
					return err
				}
			}
			if !val.Healthy {
				return exitStatus(1)
			}
			return nil
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().DurationVar(&wait, "wait", 0, "validate again every 10s until the cluster is healthy or this duration ends (0: once; a negative duration is refused)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, yaml or json")
	kubeconfigFlag(cmd, &o.Kubeconfig)
	validate.AddCommand(cmd)
	return validate
}
