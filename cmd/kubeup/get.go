package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

func newGetCommand(g *globals) *cobra.Command {
	get := &cobra.Command{
		Use:   "get",
		Short: "Show clusters and instance groups",
	}
	get.AddCommand(newGetClusterCommand(g), newGetInstanceGroupsCommand(g))
	return get
}

func newGetClusterCommand(g *globals) *cobra.Command {
	var full bool
	var output string
	var name clusterName
	cmd := &cobra.Command{
		Use:     "cluster [NAME]",
		Aliases: []string{"clusters"},
		Short:   "List the clusters, or show one",
		Long: `Without NAME, list the clusters in the state store. With NAME, show that cluster: a table, or its spec with
-o yaml or -o json. --full shows the complete spec, every default filled in, as "kubeup update cluster" uses it.

The complete spec is for reading, not for keeping: it is marked metadata.annotations[kubeup.dev/complete], and
"kubeup replace" refuses it. Stored, it would set every derived value by hand, so that a later change of what
they derive from would not reach them (bump kubernetesVersion, and every component's image would stay at the old
version). Edit the spec printed without --full: what you leave out follows the values it derives from.

A spec printed with -o yaml or json carries metadata.resourceVersion, the version of the Cluster it was read
at: "kubeup replace -f" refuses it once someone else has changed the Cluster since, rather than undo that
change (a change of an instance group meanwhile does not concern it).

A cluster whose stored spec cannot be read (corrupt, or written by a newer kubeup) is listed as (unreadable),
the others as usual; the command then fails with the reason.`,
		Example: `  kubeup get clusters
  kubeup get cluster demo.example.com --full -o yaml`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := checkOutput(output, "table", "yaml", "json"); err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			var names []string
			one := name.optional(args)
			if one != "" {
				names = []string{one}
			} else if names, err = cs.List(ctx); err != nil {
				return err
			} else if len(names) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "No clusters in state store %s: create one with `kubeup create cluster NAME --cloud local --zones a`.\n", cs.Store.URL())
			}
			// One cluster that cannot be read does not hide the others: it is listed as unreadable, and why is
			// the command's error, after what could be shown.
			clusters := []any{}
			var rows [][]string
			var problems []error
			for _, name := range names {
				c, complete, err := getCluster(cs, cmd, name, full)
				if err != nil {
					if one != "" {
						return err
					}
					problems = append(problems, err)
					rows = append(rows, []string{name, "(unreadable)", "-", "-"})
					continue
				}
				clusters = append(clusters, c)
				// The table shows the version the cluster runs: the complete spec's, defaulted when the user
				// spec leaves it out.
				rows = append(rows, []string{c.Metadata.Name, c.Spec.CloudProvider, strings.Join(c.Spec.Zones, ","), complete.Spec.KubernetesVersion})
			}
			if output == "table" {
				err = table(cmd.OutOrStdout(), []string{"NAME", "CLOUD", "ZONES", "KUBERNETES"}, rows)
			} else {
				err = printObjects(cmd.OutOrStdout(), output, one != "", clusters...)
			}
			return errors.Join(append([]error{err}, problems...)...)
		},
	}
	name.addFlag(cmd, g)
	cmd.Flags().BoolVar(&full, "full", false, "show the complete spec, with every default filled in")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	return cmd
}

func newGetInstanceGroupsCommand(g *globals) *cobra.Command {
	var output string
	var full bool
	var a groupArgs
	cmd := &cobra.Command{
		Use:     "instancegroups [NAME...] --name CLUSTER",
		Aliases: []string{"instancegroup", "ig"},
		Short:   "List a cluster's instance groups, or show some",
		Long: `List the instance groups of cluster CLUSTER, or those named NAME: a table (NAME ROLE MACHINETYPE MIN MAX ZONES,
as the cluster runs them: the values the spec leaves out are shown defaulted), or the groups' specs with -o yaml
or -o json (a JSON list, or one object for one NAME). --full shows the complete groups, every default filled in.

Each group is printed with metadata.labels[kubeup.dev/cluster], the cluster it belongs to, and
metadata.resourceVersion, the version of the group it was read at: "kubeup replace -f" reads both (and refuses
a group that someone else changed since it was read), "kubeup create -f" the label. A cluster name (it
has a dot) given as NAME is taken as --name, as an older kubeup took it.`,
		Example: `  kubeup get instancegroups --name demo.example.com
  kubeup get ig nodes --name demo.example.com -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name, groups, err := groupsArgs(cmd, a.cluster.flag, args)
			if err != nil {
				return err
			}
			if err := checkOutput(output, "table", "yaml", "json"); err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			s, err := cs.Get(ctx, name)
			if err != nil {
				return err
			}
			igs := s.InstanceGroups
			if full {
				if _, igs, err = cs.Complete(s); err != nil {
					return err
				}
			}
			if igs, err = selectGroups(name, igs, groups); err != nil {
				return err
			}
			igs = withClusterLabel(name, withResourceVersion(s, igs))
			if full {
				for _, ig := range igs {
					ig.Metadata.Annotations = model.MarkedComplete(ig.Metadata.Annotations)
				}
			}
			if output != "table" {
				return printObjects(cmd.OutOrStdout(), output, len(groups) == 1, objects(nil, igs)...)
			}
			// The table shows the groups as the cluster runs them: the complete spec's values, defaulted where the
			// spec leaves them out.
			_, complete := model.Complete(s.Cluster, s.InstanceGroups)
			var rows [][]string
			for _, ig := range igs {
				if c := findGroup(complete, ig.Metadata.Name); c != nil {
					ig = c
				}
				rows = append(rows, []string{ig.Metadata.Name, ig.Spec.Role, ig.Spec.MachineType, size(ig.Spec.MinSize), size(ig.Spec.MaxSize), strings.Join(ig.Spec.Zones, ",")})
			}
			return table(cmd.OutOrStdout(), []string{"NAME", "ROLE", "MACHINETYPE", "MIN", "MAX", "ZONES"}, rows)
		},
	}
	a.addFlags(cmd, g)
	cmd.Flags().Lookup("name").Usage = "the instance groups' cluster (required)"
	cmd.Flags().BoolVar(&full, "full", false, "show the complete specs, with every default filled in")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	return cmd
}

// groupsArgs splits the arguments of get instancegroups: the cluster (--name, or an argument with a dot, which
// an instance group's name never has), and the names of the groups to show.
func groupsArgs(cmd *cobra.Command, flag string, args []string) (cluster string, groups []string, err error) {
	cluster = flag
	for _, a := range args {
		if !strings.Contains(a, ".") {
			groups = append(groups, a)
			continue
		}
		switch {
		case flag != "" && a != flag:
			return "", nil, fmt.Errorf("%s: NAME %s and --name %s name different clusters: give one of them", cmd.CommandPath(), model.Echo(a), model.Echo(flag))
		case cluster != "" && a != cluster:
			return "", nil, fmt.Errorf("%s: %s and %s name different clusters: give one of them", cmd.CommandPath(), model.Echo(cluster), model.Echo(a))
		}
		cluster = a
	}
	if cluster == "" {
		return "", nil, fmt.Errorf("%s needs the cluster's name: %s --name CLUSTER (list the clusters with `kubeup get clusters`)",
			cmd.CommandPath(), cmd.CommandPath())
	}
	return cluster, groups, nil
}

// getCluster reads one cluster: its spec (the complete one with full) as get prints it, with the
// metadata.resourceVersion it was read at, and its complete spec.
func getCluster(cs *cloudup.Clusters, cmd *cobra.Command, name string, full bool) (shown, complete *model.Cluster, err error) {
	s, err := cs.Get(cmd.Context(), name)
	if err != nil {
		return nil, nil, err
	}
	complete, _ = model.Complete(s.Cluster, s.InstanceGroups)
	c := s.Cluster
	if full {
		if c, _, err = cs.Complete(s); err != nil {
			return nil, nil, err
		}
	}
	shown = new(*c)
	shown.Metadata.ResourceVersion = s.ClusterVersion()
	if full {
		shown.Metadata.Annotations = model.MarkedComplete(shown.Metadata.Annotations)
	}
	return shown, complete, nil
}

// warn prints on stderr what model.Warnings finds in a cluster's spec: valid, but likely not meant.
func warn(cmd *cobra.Command, c *model.Cluster) {
	for _, p := range model.Warnings(c) {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: cluster %s: %s\n", c.Metadata.Name, p)
	}
}

// warnAssets prints on stderr what model.AssetWarnings finds in the cluster's complete spec: one warning naming
// every asset without a sha256 (which no node installs) and the fix, and one per asset mirrored for another
// version. `kubeup update cluster` and `kubeup validate cluster` say it. A spec that does not complete and
// validate says nothing here: the command reports it.
func warnAssets(cmd *cobra.Command, cs *cloudup.Clusters, s *cloudup.Stored) {
	c, _, err := cs.Complete(s)
	if err != nil {
		return
	}
	var unpinned []string
	for _, p := range model.AssetWarnings(c) {
		if strings.HasSuffix(p.Path, ".sha256") {
			unpinned = append(unpinned, p.Path)
			continue
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: cluster %s: %s\n", c.Metadata.Name, p)
	}
	if len(unpinned) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: cluster %s: no node installs an asset without a sha256, and %d have none: %s. "+
			"Run `kubeup assets mirror %s --yes` (with --from DIR for files this machine holds) to copy them into the state store "+
			"and record their sha256, or set them in the spec (kubeup get cluster %s --full lists their URLs)\n",
			c.Metadata.Name, len(unpinned), strings.Join(unpinned, ", "), c.Metadata.Name, c.Metadata.Name)
	}
}

// withResourceVersion returns copies of igs that carry the version of their group in s they were read at.
func withResourceVersion(s *cloudup.Stored, igs []*model.InstanceGroup) []*model.InstanceGroup {
	out := make([]*model.InstanceGroup, len(igs))
	for i, ig := range igs {
		out[i] = new(*ig)
		out[i].Metadata.ResourceVersion = s.GroupVersion(ig.Metadata.Name)
	}
	return out
}

func size(p *int32) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(int(*p))
}
