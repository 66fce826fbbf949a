// Command nodeup is run on every node at boot to converge it: files, static-pod manifests, systemd units.
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
		Use:               "nodeup",
		Short:             "Converge a node at boot: files, static-pod manifests, systemd units",
		Long:              "nodeup runs on every node at boot: it loads the node's configuration and converges the machine to it.",
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.AddCommand(version.Command("nodeup"))
	return root
}
