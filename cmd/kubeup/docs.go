package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cliReference renders docs/cli.md from the command tree: every command's synopsis, description, examples and
// flags, in the tree's order. A test keeps docs/cli.md equal to it (make update-golden rewrites it).
func cliReference(root *cobra.Command) []byte {
	root.InitDefaultCompletionCmd() // Execute adds it; the reference is made without executing
	var b bytes.Buffer
	b.WriteString("# kubeup command reference\n\n")
	b.WriteString("<!-- Generated from the cobra commands by `make update-golden` (cmd/kubeup/docs.go); do not edit. -->\n\n")
	b.WriteString("Results go to stdout, errors and logs to stderr. An error exits 1; `kubeup update cluster --detailed-exitcode` exits 2 when changes are pending.\n\n")
	b.WriteString("Every command that names a cluster takes it the same way: `NAME`, or `--name NAME` (both may be given when they agree). " +
		"A command or resource kubeup does not have (`kubeup update clsuter`, `kubeup get secrets`) is an error that names it and suggests the one it is closest to; " +
		"a command that only groups others (`kubeup get`) run alone says which there are. Both exit 1.\n\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", c.CommandPath(), c.Short)
		if c.Runnable() && !c.HasSubCommands() {
			fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
		}
		if c.Long != "" {
			fmt.Fprintf(&b, "%s\n\n", c.Long)
		}
		if len(c.Aliases) > 0 {
			fmt.Fprintf(&b, "Aliases: %s\n\n", strings.Join(c.Aliases, ", "))
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "Examples:\n\n```\n%s\n```\n\n", c.Example)
		}
		if flags := flagTable(c.LocalNonPersistentFlags()); flags != "" {
			fmt.Fprintf(&b, "Flags:\n\n%s\n", flags)
		}
		if c == c.Root() {
			if flags := flagTable(c.PersistentFlags()); flags != "" {
				fmt.Fprintf(&b, "Flags of every command:\n\n%s\n", flags)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return bytes.TrimRight(b.Bytes(), "\n")
}

func flagTable(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(&b, "- `%s` %s: %s%s\n", name, f.Value.Type(), f.Usage, def)
	})
	return b.String()
}
