package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

func newReplaceCommand(g *globals) *cobra.Command {
	var file string
	var o cloudup.ReplaceOptions
	var name clusterName
	cmd := &cobra.Command{
		Use:   "replace -f FILE [NAME]",
		Short: "Replace a cluster's spec, its instance groups, or both, with those in a file",
		Long: `Replace what FILE ("-" for stdin) holds: YAML documents separated by "---", any mix of one Cluster and
InstanceGroups, as "kubeup get -o yaml" prints them; or a list of them, as "kubeup get -o json" prints several,
or a List (apiVersion v1, kind List, items), as kubectl prints them. The Cluster, when the file holds one, replaces the
cluster's spec; each InstanceGroup replaces the group of its name, or is added; instance groups the file does
not hold are kept. A file of InstanceGroups alone is for the cluster they name with
metadata.labels[kubeup.dev/cluster] ("kubeup get instancegroups" prints it), or for NAME. The whole result is
validated first, and written in one piece: every problem is listed with its field path (an instance group's
prefixed instancegroup/NAME, a document's that does not decode with its number and line), and nothing is
written. FILE may hold at most 1 MiB. Once the cluster was applied, a file of InstanceGroups alone that would
add or remove etcd members (a ControlPlane group added, or a role changed) is refused.

Each object printed by "kubeup get" (the Cluster, each InstanceGroup) carries metadata.resourceVersion, the
version of that object it was read at. When someone else has changed an object of FILE since (edit,
replace), replace refuses rather than silently undo that change, naming the object and the fields at which it
and FILE differ: read it again, re-apply your change to it and replace with that, or replace with --force to
overwrite the other change knowingly. A change of an object FILE does not hold (another instance group) does
not concern it, and neither does one that made the object what FILE holds: replacing twice with the same file
changes nothing the second time, and says so. A file without resourceVersion (a spec written by hand, or kept
in git) replaces whatever is stored, as kubectl replace does. When another command writes the cluster's spec
at the same moment, replace reads it again and decides again, a few times, before it gives up.

The spec printed by "kubeup get --full" is refused: it is marked metadata.annotations[kubeup.dev/complete],
and storing it would pin every value derived from another (bump kubernetesVersion later, and every component's
image would stay at the old version). Replace with the spec "kubeup get" prints without --full. A derived value
set by hand that no longer matches what it derives from (an image whose tag is not kubernetesVersion) is
stored, with a warning on stderr.

A cluster whose stored spec cannot be read (corrupt, or written by a newer kubeup) can be replaced too; then
nothing of the stored spec is kept. The cloud is not changed until "kubeup update cluster NAME --yes".

NAME (or --name NAME) is optional: when given, FILE must hold that cluster's documents, or nothing is written.`,
		Example: `  kubeup get cluster demo.example.com -o yaml > demo.yaml
  $EDITOR demo.yaml
  kubeup replace -f demo.yaml
  kubeup get ig nodes --name demo.example.com -o yaml > nodes.yaml
  $EDITOR nodes.yaml
  kubeup replace -f nodes.yaml`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if file == "" {
				return fmt.Errorf("-f is required: the file holding the Cluster (\"-\" for stdin)")
			}
			source, data, err := readSpec(cmd, file)
			if err != nil {
				return err
			}
			objs, err := model.Decode(source, data)
			if err != nil {
				return err
			}
			o.Cluster = name.optional(args)
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			r, err := cs.Replace(ctx, source, objs, o)
			if err != nil {
				return err
			}
			out, cluster := cmd.OutOrStdout(), r.Cluster
			if r.Unchanged {
				fmt.Fprintf(out, "No change: cluster %s already holds what %s holds; nothing was written.\n", cluster, source)
				return nil
			}
			if objs.Cluster != nil {
				fmt.Fprintf(out, "Replaced the spec of cluster %s.\n", cluster)
			} else {
				fmt.Fprintf(out, "Replaced instance groups of cluster %s: %s.\n", cluster, strings.Join(groupNames(objs.InstanceGroups), ", "))
			}
			if len(r.Added) > 0 {
				fmt.Fprintf(out, "  Added the instance groups the cluster did not have: %s\n", strings.Join(r.Added, ", "))
			}
			if r.Unreadable != nil {
				fmt.Fprintf(out, "  Its stored spec could not be read, and nothing of it was kept: %v\n", r.Unreadable)
			}
			if len(r.Kept) > 0 {
				fmt.Fprintf(out, "  Kept the instance groups %s does not hold: %s\n", source, strings.Join(r.Kept, ", "))
			}
			fmt.Fprintf(out, "  Review the changes: kubeup update cluster %s\n", cluster)
			warn(cmd, r.Stored.Cluster)
			return nil
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file holding a Cluster, InstanceGroups, or both (\"-\" for stdin)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "replace even if an object of FILE changed since its metadata.resourceVersion, overwriting that change")
	return cmd
}

func groupNames(igs []*model.InstanceGroup) []string {
	names := make([]string, len(igs))
	for i, ig := range igs {
		names[i] = ig.Metadata.Name
	}
	return names
}

// readSpec reads at most model.MaxSpecBytes of the file ("-": stdin), and returns the name to give it in
// messages.
func readSpec(cmd *cobra.Command, file string) (source string, data []byte, err error) {
	if file == "-" {
		data, err = model.ReadSpec("stdin", cmd.InOrStdin())
		return "stdin", data, err
	}
	var r io.ReadCloser
	if r, err = os.Open(file); err != nil {
		return file, nil, err
	}
	defer r.Close()
	data, err = model.ReadSpec(file, r)
	return file, data, err
}
