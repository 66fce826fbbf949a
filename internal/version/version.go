// Package version is the build's version and the `version` command every kubeup binary has.
package version

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Version is set at build time: -ldflags "-X kubeup.dev/kubeup/internal/version.Version=...".
var Version = "dev"

// Command returns the `version` subcommand of binary, which prints "<binary> version <Version>".
func Command(binary string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the " + binary + " version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s version %s\n", binary, Version)
			return err
		},
	}
}
