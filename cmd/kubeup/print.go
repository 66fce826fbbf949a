package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/model"
)

// objects lists a cluster (if any) and its instance groups, in that order.
func objects(c *model.Cluster, igs []*model.InstanceGroup) []any {
	objs := []any{}
	if c != nil {
		objs = append(objs, c)
	}
	for _, ig := range igs {
		objs = append(objs, ig)
	}
	return objs
}

// checkOutput refuses an -o value that is not one of formats.
func checkOutput(output string, formats ...string) error {
	if !slices.Contains(formats, output) {
		return fmt.Errorf("-o %s: want %s or %s", model.Echo(output), strings.Join(formats[:len(formats)-1], ", "), formats[len(formats)-1])
	}
	return nil
}

// checkDryRunOutput refuses -o without --dry-run on a command whose -o is the format of what --dry-run prints:
// without --dry-run the command writes and prints no object, and whoever asked for one expected a preview, not a
// write.
func checkDryRunOutput(cmd *cobra.Command, dryRun bool, what string) error {
	if dryRun || !cmd.Flags().Changed("output") {
		return nil
	}
	output, _ := cmd.Flags().GetString("output")
	return fmt.Errorf("-o %s prints the %s only with --dry-run; without --dry-run, %s writes it and prints no %s: "+
		"add --dry-run to see it without writing it, or leave -o out to write it; nothing was changed",
		output, what, cmd.CommandPath(), what)
}

// printObjects writes objects as YAML documents separated by "---", or as JSON: one object when single (a
// command that shows one named object), else a list, even of one or none, so that a program reading it need not
// guess.
func printObjects(w io.Writer, format string, single bool, objs ...any) error {
	switch format {
	case "yaml":
		b, err := model.Encode(objs...)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "json":
		var v any = objs
		if single && len(objs) == 1 {
			v = objs[0]
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	return fmt.Errorf("-o %s: want yaml or json", model.Echo(format))
}

// table writes rows under a header, aligned.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
