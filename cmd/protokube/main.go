// Command protokube runs on every control-plane node to keep it converged: etcd volumes, manifests, DNS.
//
// It is a thin main: flag wiring only.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"kubeup.dev/kubeup/internal/version"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:               "protokube",
		Short:             "Keep a control-plane node converged: etcd volumes, manifests, DNS",
		Long:              "protokube runs forever on every control-plane node: it claims and mounts an etcd volume, writes the etcd manifest and publishes DNS.",
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.AddCommand(version.Command("protokube"))
	return root
}
