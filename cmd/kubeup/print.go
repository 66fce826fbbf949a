package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"kubeup.dev/kubeup/model"
)

// printObjects writes a cluster and its instance groups as YAML documents or a JSON list.
func printObjects(w io.Writer, format string, c *model.Cluster, igs []*model.InstanceGroup) error {
	objs := []any{}
	if c != nil {
		objs = append(objs, c)
	}
	for _, ig := range igs {
		objs = append(objs, ig)
	}
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
		if len(objs) == 1 {
			v = objs[0]
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	return fmt.Errorf("-o %q: want yaml or json", format)
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
