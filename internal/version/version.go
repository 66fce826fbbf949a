// Package version is the build's version and the `version` command every kubeup binary has.
package version

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Version is set at build time: -ldflags "-X kubeup.dev/kubeup/internal/version.Version=...".
var Version = "dev"

// The nodeup that the machines of an aws or gce cluster fetch at boot, by default (spec.nodeup): where its
// linux/amd64 binary is published and that binary's sha256 in lower-case hex. `make build` builds that nodeup
// first and stamps kubeup with both (-X kubeup.dev/kubeup/internal/version.NodeupURL=...,
// -X ...NodeupSHA256=...); the URL is the release download of Version unless the build says otherwise. A build
// without the stamp (go build, go test) has neither: a cluster's spec must then set spec.nodeup itself.
var (
	NodeupURL    = ""
	NodeupSHA256 = ""
)

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
