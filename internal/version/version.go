// Package version is the build's version and the `version` command every kubeup binary has.
package version

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Version is set at build time: -ldflags "-X kubeup.dev/kubeup/internal/version.Version=...".
var Version = "dev"

// Nodeup is the nodeup that the machines of each cloud's clusters fetch at boot, by default (spec.nodeup): one
// "cloud=url@sha256" per cloud, comma-separated, where url is where that cloud's linux/amd64 build (nodeup-aws,
// linking the aws state store only) is published and sha256 that binary's, in lower-case hex. `make build`
// builds each cloud's nodeup first and stamps kubeup with the list (-X kubeup.dev/kubeup/internal/version.Nodeup=...);
// the URLs are the release downloads of Version unless the build says otherwise. A build without the stamp (go
// build, go test) has none: a cluster's spec must then set spec.nodeup itself.
var Nodeup = ""

// NodeupOf returns the url and sha256 of cloud's nodeup in Nodeup; both "" when the build was not stamped for it.
func NodeupOf(cloud string) (url, sha256 string) {
	for _, entry := range strings.Split(Nodeup, ",") {
		name, rest, ok := strings.Cut(entry, "=")
		if !ok || name != cloud {
			continue
		}
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			return rest[:at], rest[at+1:]
		}
	}
	return "", ""
}

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
