package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/model"
)

// groupArgs is how the commands on one instance group take it: the group's NAME, and its cluster with --name
// CLUSTER, as kops users type them.
type groupArgs struct {
	cluster clusterName
}

// addFlags adds --name to cmd, and the completion of NAME to the groups of that cluster.
func (a *groupArgs) addFlags(cmd *cobra.Command, g *globals) {
	a.cluster.addFlag(cmd, g)
	cmd.Flags().Lookup("name").Usage = "the instance group's cluster (required)"
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if (len(args) > 0 && cmd.Args != nil) || a.cluster.flag == "" { // get instancegroups (no Args) takes several
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cs, err := g.clusters(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		s, err := cs.Get(cmd.Context(), a.cluster.flag)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []string
		for _, ig := range s.InstanceGroups {
			names = append(names, ig.Metadata.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// args is the Args of a command on one instance group.
func (a *groupArgs) args(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s takes one instance group NAME, got %d arguments (%s): %s NAME --name CLUSTER",
			cmd.CommandPath(), len(args), echoAll(args), cmd.CommandPath())
	}
	return nil
}

// names returns the group's name and its cluster's, or an error that says how to give the cluster. A NAME that
// is no instance group's name is refused, quoted: it names no group, and would be repeated in messages.
func (a *groupArgs) names(cmd *cobra.Command, args []string) (group, cluster string, err error) {
	if err := model.ValidInstanceGroupName(args[0]); err != nil {
		return "", "", fmt.Errorf("%s: %w; nothing was changed", cmd.CommandPath(), err)
	}
	if a.cluster.flag == "" {
		return "", "", fmt.Errorf("%s needs the instance group's cluster: %s %s --name CLUSTER (list the clusters with `kubeup get clusters`)",
			cmd.CommandPath(), cmd.CommandPath(), args[0])
	}
	return args[0], a.cluster.flag, nil
}

func newCreateInstanceGroupCommand(g *globals) *cobra.Command {
	var a groupArgs
	var role, machineType, image, output string
	var zones []string
	var minSize, maxSize int32
	var dryRun bool
	cmd := &cobra.Command{
		Use:     "instancegroup NAME --name CLUSTER --role Node|ControlPlane --zones Z1,Z2,...",
		Aliases: []string{"ig"},
		Short:   "Add an instance group to a cluster's spec",
		Long: `Add the instance group NAME to the spec of cluster CLUSTER. What the flags leave out is defaulted as in every spec
(the zones of a Node group: all of the cluster's; the machine type and image: the cloud's; the size: 1). The
cluster's whole spec, with the group, is validated before it is written, in one conditional write as every
change: nothing is written when it is invalid (every problem listed, with its field path), or when the cluster has
a group of that name already. When someone else writes the cluster's spec meanwhile (another group created at the
same moment), the spec is read again and the group added to theirs.

A ControlPlane group runs one member of each etcd cluster whose members are defaulted. Once the cluster was
applied, a group that would add etcd members is refused: kubeup does not change the membership of a running etcd
cluster.

With --dry-run, print the group (-o yaml or json) instead of writing it; -o without --dry-run is refused (it
would write the group and print none). The cloud is not changed until "kubeup update cluster CLUSTER --yes".`,
		Example: `  kubeup create instancegroup gpu-nodes --name demo.example.com --role Node --zones a,b --min 2 --max 4
  kubeup create ig batch --name demo.example.com --machine-type t3.large --dry-run -o yaml`,
		Args: a.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			group, cluster, err := a.names(cmd, args)
			if err != nil {
				return err
			}
			if err := checkDryRunOutput(cmd, dryRun, "group"); err != nil {
				return err
			}
			if err := checkOutput(output, "yaml", "json"); err != nil {
				return err
			}
			r, err := parseRole(role)
			if err != nil {
				return err
			}
			ig := &model.InstanceGroup{
				APIVersion: model.APIVersion,
				Kind:       model.KindInstanceGroup,
				Metadata:   model.ObjectMeta{Name: group},
				Spec:       model.InstanceGroupSpec{Role: r, Zones: zones, MachineType: machineType, Image: image},
			}
			if cmd.Flags().Changed("min") {
				ig.Spec.MinSize = &minSize
			}
			if cmd.Flags().Changed("max") {
				ig.Spec.MaxSize = &maxSize
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			if r == model.RoleControlPlane && len(zones) == 0 {
				// The default, all of the cluster's zones, is a Node group's: say what a ControlPlane group needs
				// first, rather than among what follows from several zones.
				if s, err := cs.Get(ctx, cluster); err == nil && len(s.Cluster.Spec.Zones) > 1 {
					return fmt.Errorf("create instancegroup %s: --zones is required for a ControlPlane group of a cluster with several zones: it runs in one (its etcd volumes are zonal): give --zones ZONE, one of %s; nothing was written",
						group, strings.Join(s.Cluster.Spec.Zones, ", "))
				}
			}
			s, err := cs.CreateInstanceGroups(ctx, "create instancegroup "+group, cluster, []*model.InstanceGroup{ig}, !dryRun)
			if err != nil {
				return err
			}
			if dryRun {
				shown := *ig
				shown.Metadata.Labels = cloudup.WithClusterLabel(nil, cluster)
				return printObjects(cmd.OutOrStdout(), output, true, &shown)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Created instance group %s in cluster %s (%d instance groups).\n", group, cluster, len(s.InstanceGroups))
			reviewHint(out, cluster)
			return nil
		},
	}
	a.addFlags(cmd, g)
	f := cmd.Flags()
	f.StringVar(&role, "role", model.RoleNode, "the group's role: Node or ControlPlane")
	f.StringSliceVar(&zones, "zones", nil, "zones of the group's machines, comma-separated, each one of the cluster's (default: a Node group all of them; a ControlPlane group needs exactly one)")
	f.Int32Var(&minSize, "min", 0, "the group's smallest size (spec.minSize; left out: 1)")
	f.Int32Var(&maxSize, "max", 0, "the group's largest size (spec.maxSize; left out: the smallest size)")
	for _, n := range []string{"min", "max"} {
		f.Lookup(n).DefValue = "" // only a size given is written into the spec: the default is the spec's
	}
	f.StringVar(&machineType, "machine-type", "", "the machine type (spec.machineType; default: the cloud's: t3.medium, e2-standard-2, local)")
	f.StringVar(&image, "image", "", "the machine image (spec.image; default: the cloud's Debian 12)")
	f.BoolVar(&dryRun, "dry-run", false, "validate and print the group instead of writing it")
	f.StringVarP(&output, "output", "o", "yaml", "output format of --dry-run: yaml or json (refused without --dry-run)")
	return cmd
}

// parseRole takes a role as a user types it: Node or ControlPlane, in any case.
func parseRole(role string) (string, error) {
	for _, r := range []string{model.RoleNode, model.RoleControlPlane} {
		if strings.EqualFold(role, r) {
			return r, nil
		}
	}
	return "", fmt.Errorf("--role %s: want %s or %s", model.Echo(role), model.RoleNode, model.RoleControlPlane)
}

func newEditInstanceGroupCommand(g *globals) *cobra.Command {
	var a groupArgs
	cmd := &cobra.Command{
		Use:     "instancegroup NAME --name CLUSTER",
		Aliases: []string{"ig"},
		Short:   "Edit an instance group with $EDITOR",
		Long: `Open instance group NAME of cluster CLUSTER in $KUBE_EDITOR, else $EDITOR, else vi, as "kubeup edit cluster"
does: when you save and quit, the cluster's whole spec with the edited group is validated and written back; an
invalid group opens the editor again with every problem listed at its top (save it unchanged to give up, and
your edited text is kept in a file whose path is printed: fix it and run "kubeup replace -f FILE"). If someone
else changes the group while you edit, your edit is refused and kept the same way (a change of the Cluster or of
another group meanwhile is kept beside yours). The group cannot be renamed, nor moved to another cluster. Once the cluster was
applied, a change that adds or removes etcd members (a role changed to or from ControlPlane) is refused. The
cloud is not changed until "kubeup update cluster CLUSTER --yes".`,
		Example: `  kubeup edit instancegroup nodes --name demo.example.com`,
		Args:    a.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			group, cluster, err := a.names(cmd, args)
			if err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			changed, kept, err := cs.EditInstanceGroup(ctx, cluster, group, editorOnce())
			return editResult(cmd, cs, cluster, "instance group "+group+" of cluster "+cluster, changed, kept, err)
		},
	}
	a.addFlags(cmd, g)
	return cmd
}

func newDeleteInstanceGroupCommand(g *globals) *cobra.Command {
	var a groupArgs
	var apply bool
	cmd := &cobra.Command{
		Use:     "instancegroup NAME --name CLUSTER [--yes]",
		Aliases: []string{"ig"},
		Short:   "Remove an instance group from a cluster's spec",
		Long: `Remove instance group NAME from the spec of cluster CLUSTER. Without --yes, say what would be removed and change
nothing. With --yes, write the cluster's spec without the group, validated and in one conditional write as every
change; the cloud is not changed until "kubeup update cluster CLUSTER --yes", whose dry run shows what goes.

A group whose node runs etcd members (a ControlPlane group, with --yes or without) is refused, naming the
members and what losing them would do to each etcd cluster's quorum: kubeup does not remove members from a
running etcd cluster.

"kubeup update cluster CLUSTER --yes" then deletes what the group leaves (its dry run lists it as removed): its
node configuration in the state store (CLUSTER/nodeup/NAME), and its Auto Scaling group and launch template
(aws) or its managed instance groups and instance templates (gce), those cluster CLUSTER owns only.`,
		Example: `  kubeup delete instancegroup gpu-nodes --name demo.example.com
  kubeup delete ig gpu-nodes --name demo.example.com --yes`,
		Args: a.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			group, cluster, err := a.names(cmd, args)
			if err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			ig, err := cs.DeleteInstanceGroup(ctx, cluster, group, apply)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			what := fmt.Sprintf("instance group %s (role %s, zones %s, size %s-%s)", group, ig.Spec.Role, zonesOf(ig), size(ig.Spec.MinSize), size(ig.Spec.MaxSize))
			if !apply {
				fmt.Fprintf(out, "Will delete %s from the spec of cluster %s.\n", what, cluster)
				fmt.Fprintf(out, "\nMust specify --yes to delete it.\n")
				return nil
			}
			fmt.Fprintf(out, "Deleted %s from the spec of cluster %s.\n", what, cluster)
			reviewHint(out, cluster)
			return nil
		},
	}
	a.addFlags(cmd, g)
	cmd.Flags().BoolVarP(&apply, "yes", "y", false, "delete (without it, only say what would be deleted)")
	return cmd
}

// zonesOf is an instance group's zones, "(default)" when its spec leaves them out.
func zonesOf(ig *model.InstanceGroup) string {
	if len(ig.Spec.Zones) == 0 {
		return "(default)"
	}
	return strings.Join(ig.Spec.Zones, ",")
}

// withClusterLabel returns copies of igs that name their cluster (model.LabelCluster), as get prints them.
func withClusterLabel(cluster string, igs []*model.InstanceGroup) []*model.InstanceGroup {
	out := make([]*model.InstanceGroup, len(igs))
	for i, ig := range igs {
		out[i] = new(*ig)
		out[i].Metadata.Labels = cloudup.WithClusterLabel(ig.Metadata.Labels, cluster)
	}
	return out
}

// findGroup returns the instance group of igs named name, or nil.
func findGroup(igs []*model.InstanceGroup, name string) *model.InstanceGroup {
	for _, ig := range igs {
		if ig.Metadata.Name == name {
			return ig
		}
	}
	return nil
}

// selectGroups returns the groups of igs named in names (all of them when names is empty), in the order of
// names, or an error naming those the cluster does not have.
func selectGroups(cluster string, igs []*model.InstanceGroup, names []string) ([]*model.InstanceGroup, error) {
	if len(names) == 0 {
		return igs, nil
	}
	var out []*model.InstanceGroup
	var missing []string
	for _, n := range names {
		i := slices.IndexFunc(igs, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == n })
		switch {
		case i < 0:
			missing = append(missing, n)
		case !slices.Contains(out, igs[i]): // a name given twice shows its group once
			out = append(out, igs[i])
		}
	}
	if len(missing) > 0 {
		var have []string
		for _, ig := range igs {
			have = append(have, ig.Metadata.Name)
		}
		return nil, fmt.Errorf("cluster %s has no instance group %s: it has %s", cluster, echoAll(missing), strings.Join(have, ", "))
	}
	return out, nil
}
