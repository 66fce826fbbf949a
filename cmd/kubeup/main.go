// Command kubeup is the operator's tool: it will create, update and delete kubeup clusters.
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
		Use:          "kubeup",
		Short:        "Create, update and delete Kubernetes clusters from a cluster spec",
		Long:         "kubeup is the operator's tool: it expands a cluster spec into a graph of idempotent tasks and runs them, after a dry run that shows every change.",
		SilenceUsage: true,
	}
	root.AddCommand(version.Command("kubeup"))
	return root
}
