package main

import (
	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"kubeup.dev/kubeup/cloudup"
)

func newEditCommand(g *globals) *cobra.Command {
	edit := &cobra.Command{
		Use:   "edit",
		Short: "Edit a resource in your editor: a cluster or an instance group",
	}
	var name clusterName
	cmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Edit a cluster's spec with $EDITOR",
		Long: `Open the cluster's spec in $KUBE_EDITOR, else $EDITOR, else vi. When you save and quit, the spec is validated and
written back. A file that does not decode, or an invalid spec, opens the editor again on your text with the
problems in a comment block at its top, as kubectl edit does: fix them and save, or save the file unchanged to
give up. Then, or if the editor fails, or if someone else changes the Cluster while you edit (your edit is
refused rather than written over their change; a change of an instance group meanwhile is kept beside yours),
your edited text is kept in a file whose path is printed (fix it and run "kubeup replace -f FILE"); otherwise
the temporary file is removed. Saving the file unchanged at first, or emptied, cancels the edit. The cloud is not changed until "kubeup update cluster NAME --yes".`,
		Args: name.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n, err := name.required(cmd, args)
			if err != nil {
				return err
			}
			cs, err := g.clusters(ctx)
			if err != nil {
				return err
			}
			changed, kept, err := cs.Edit(ctx, n, editorOnce())
			return editResult(cmd, cs, n, "the spec of cluster "+n, changed, kept, err)
		},
	}
	name.addFlag(cmd, g)
	edit.AddCommand(cmd, newEditInstanceGroupCommand(g))
	return edit
}

// editResult reports the end of an edit of what (in cluster): refused (and where the edit is kept), cancelled,
// or written, with the cluster's warnings.
func editResult(cmd *cobra.Command, cs *cloudup.Clusters, cluster, what string, changed bool, kept string, err error) error {
	if err != nil {
		if kept != "" {
			return fmt.Errorf("%w\nthe cluster was not changed; your edit is kept in %s (fix it and run `kubeup replace -f %s`)", err, kept, kept)
		}
		return err
	}
	if !changed {
		fmt.Fprintln(cmd.OutOrStdout(), "Edit cancelled: no changes made.")
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Updated %s. Review the changes: kubeup update cluster %s\n", what, cluster)
	if s, err := cs.Get(cmd.Context(), cluster); err == nil {
		warn(cmd, s.Cluster)
	}
	return nil
}

// runEditor runs the user's editor on path. The editor variable may hold arguments ("code --wait").
// stdinIsTerminal says whether a person may be at the editor: only then is it opened again after a refused save.
// (/dev/null is a character device too: the terminal is told by its termios.)
var stdinIsTerminal = func() bool {
	_, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS)
	return err == nil
}

// editorOnce is runEditor, opened again after a refused save only when a person may be at it (a terminal): a
// scripted KUBE_EDITOR (sed -i ...) makes the same change at every run, and the edit would never end.
func editorOnce() func(path string) error {
	runs := 0
	return func(path string) error {
		if runs++; runs > 1 && !stdinIsTerminal() {
			return cloudup.ErrNoReopen
		}
		return runEditor(path)
	}
}

func runEditor(path string) error {
	editor := os.Getenv("KUBE_EDITOR")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	c := exec.Command("sh", "-c", editor+` "$1"`, "editor", path)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w", editor, err)
	}
	return nil
}
