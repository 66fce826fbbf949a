package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/model"
)

// clusterName is how every command that names a cluster takes it: a positional NAME, or --name NAME as kops
// users type it. Either will do; both are accepted when they agree.
type clusterName struct {
	flag string
}

// addFlag adds --name to cmd. With g, NAME and --name complete (shell completion) to the clusters of the state
// store g names.
func (n *clusterName) addFlag(cmd *cobra.Command, g *globals) {
	cmd.Flags().StringVar(&n.flag, "name", "", "the cluster's name, as NAME (give one of them)")
	if g == nil {
		return
	}
	clusters := func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cs, err := g.clusters(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names, err := cs.List(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	cmd.ValidArgsFunction = clusters
	if err := cmd.RegisterFlagCompletionFunc("name", clusters); err != nil {
		panic(err) // a programmer's error: the flag was just added
	}
}

// args is the Args of a command whose only positional argument is the cluster's optional NAME: at most one, and
// one that agrees with --name.
func (n *clusterName) args(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("%s takes one cluster NAME, got %d arguments (%s)", cmd.CommandPath(), len(args), echoAll(args))
	}
	if len(args) == 1 && n.flag != "" && args[0] != n.flag {
		return fmt.Errorf("%s: NAME %s and --name %s name different clusters: give one of them", cmd.CommandPath(), model.Echo(args[0]), model.Echo(n.flag))
	}
	return nil
}

// echoAll is args as a message repeats them: each quoted and cut (model.Echo), at most three of them.
func echoAll(args []string) string {
	var shown []string
	for i, a := range args {
		if i == 3 {
			shown = append(shown, fmt.Sprintf("and %d more", len(args)-i))
			break
		}
		shown = append(shown, model.Echo(a))
	}
	return strings.Join(shown, " ")
}

// optional returns the cluster's name, "" when neither NAME nor --name is given.
func (n *clusterName) optional(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return n.flag
}

// required returns the cluster's name, or an error that says how to give it.
func (n *clusterName) required(cmd *cobra.Command, args []string) (string, error) {
	if name := n.optional(args); name != "" {
		return name, nil
	}
	return "", fmt.Errorf("%s needs the cluster's name: %s NAME, or --name NAME (list the clusters with `kubeup get clusters`)",
		cmd.CommandPath(), cmd.CommandPath())
}

// requireSubcommand makes every command of the tree that only groups others (kubeup get, kubeup update, ...)
// refuse what is not one of its subcommands: with exit status 1, naming what was typed and suggesting the
// subcommand it is closest to, instead of printing help and exiting 0. Without arguments it says which
// subcommands there are. The root without arguments still prints its help.
func requireSubcommand(c *cobra.Command) {
	for _, sub := range c.Commands() {
		requireSubcommand(sub)
	}
	if !c.HasSubCommands() || c.Run != nil || c.RunE != nil {
		return
	}
	c.SuggestionsMinimumDistance = 2
	// Its usage shows "kubeup get [command]", not also "kubeup get [flags]" as if it ran by itself.
	c.SetUsageTemplate(strings.Replace(c.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			if !cmd.HasParent() {
				return cmd.Help()
			}
			return fmt.Errorf("%s needs a subcommand: %s (see `%s --help`)", cmd.CommandPath(), subcommandList(cmd), cmd.CommandPath())
		}
		return unknownCommand(cmd, args[0])
	}
}

// unknownCommand is the error for word, which is none of the subcommands of c: it suggests those it is close to,
// or lists them all.
func unknownCommand(c *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %s for %q", model.Echo(word), c.CommandPath())
	if s := c.SuggestionsFor(word); len(s) > 0 {
		return fmt.Errorf("%s: did you mean %s?", msg, strings.Join(s, " or "))
	}
	return fmt.Errorf("%s: want %s (see `%s --help`)", msg, subcommandList(c), c.CommandPath())
}

// helpCommand is "kubeup help [command]": the help of that command, and for a command kubeup does not have the
// same error as running it (cobra's own prints the root's help, and exits 0).
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(_ *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 && c.HasSubCommands() {
				c.SuggestionsMinimumDistance = 2
				return unknownCommand(c, rest[0])
			}
			return c.Help()
		},
	}
}

// subcommandList names a command's subcommands: "cluster or instancegroups".
func subcommandList(c *cobra.Command) string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
