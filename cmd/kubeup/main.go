// Command kubeup is the operator's tool: it will create, update and delete kubeup clusters.
//
// It is a thin main: flag wiring only.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
	root.AddCommand(newVersionCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the kubeup version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kubeup version %s\n", version)
			return err
		},
	}
}
