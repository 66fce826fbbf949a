// Command protokube runs on every control-plane node to keep it converged: etcd volumes, manifests, DNS.
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
		Use:               "protokube",
		Short:             "Keep a control-plane node converged: etcd volumes, manifests, DNS",
		Long:              "protokube runs forever on every control-plane node: it claims and mounts an etcd volume, writes the etcd manifest and publishes DNS.",
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.AddCommand(newVersionCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the protokube version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "protokube version %s\n", version)
			return err
		},
	}
}
