package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestParentCommands runs every command that only groups others (kubeup, get, update, completion, ...) with a
// typo of its first subcommand, with a word that is none, and without arguments: an error that names what was
// typed (and suggests the subcommand meant), exit status 1; never help and exit 0. The root alone prints its
// help without arguments.
func TestParentCommands(t *testing.T) {
	var parents []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasAvailableSubCommands() {
			parents = append(parents, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	if len(parents) < 8 {
		t.Fatalf("found %d parent commands, want kubeup, create, get, edit, update, delete, export and completion", len(parents))
	}
	for _, p := range parents {
		path := strings.Fields(p.CommandPath())[1:]
		var first string
		for _, sub := range p.Commands() {
			if sub.IsAvailableCommand() {
				first = sub.Name()
				break
			}
		}
		typo := first[:1] + first[2:3] + first[1:2] + first[3:] // clsuter for cluster
		// assets: the swap leaves the word as it is; swap the next two letters instead (asests).
		if typo == first {
			typo = first[:2] + first[3:4] + first[2:3] + first[4:]
		}
		t.Run(p.CommandPath(), func(t *testing.T) {
			for _, tc := range []struct {
				args []string
				want string
			}{
				{append(append([]string{}, path...), typo, "x.example.com"), `unknown command "` + typo + `" for "` + p.CommandPath() + `": did you mean `},
				{append(append([]string{}, path...), "secrets"), `unknown command "secrets" for "` + p.CommandPath() + `": want `},
				{path, p.CommandPath() + " needs a subcommand: "},
				{append(append([]string{"help"}, path...), typo), `unknown command "` + typo + `" for "` + p.CommandPath() + `": did you mean `},
			} {
				out, stderr, err := kubeup(t, t.TempDir(), tc.args...)
				if len(path) == 0 && len(tc.args) == 0 {
					if err != nil || !strings.Contains(out, "Usage:") {
						t.Errorf("kubeup without arguments: %v, printed %q; want its help", err, out)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != 1 {
					t.Errorf("kubeup %s: error %v (exit %d), want %q and exit 1", strings.Join(tc.args, " "), err, exitCode(err), tc.want)
				}
				if strings.Contains(tc.want, "did you mean") && !strings.Contains(err.Error(), first) {
					t.Errorf("kubeup %s: %v, want it to suggest %s", strings.Join(tc.args, " "), err, first)
				}
				if strings.Contains(out+stderr, "Usage:") {
					t.Errorf("kubeup %s printed help:\n%s%s", strings.Join(tc.args, " "), out, stderr)
				}
			}
		})
	}
}

// TestClusterName checks that every command that names a cluster takes it as NAME and as --name: the same
// cluster either way, both when they agree, an error when they differ, and one that says how to give it when
// neither is given.
func TestClusterName(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	mustKubeup(t, state, "create", "cluster", "--name", "other.example.com", "--cloud", "local", "--zones", "a")
	mustKubeup(t, state, "create", "cluster", "both.example.com", "--name", "both.example.com", "--cloud", "local", "--zones", "a")
	if out := mustKubeup(t, state, "get", "clusters"); !strings.Contains(out, name) || !strings.Contains(out, "other.example.com") || !strings.Contains(out, "both.example.com") {
		t.Fatalf("create with NAME, --name or both: get clusters printed\n%s", out)
	}
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte(mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", "true")
	t.Setenv("KUBECONFIG", filepath.Join(dir, "kubeconfig"))

	for _, tc := range []struct {
		cmd  []string
		want string // in stdout, or in the error when it starts with "error: "
	}{
		{[]string{"get", "cluster"}, "KUBERNETES"},
		{[]string{"get", "instancegroups"}, "control-plane-a"},
		{[]string{"edit", "cluster"}, "Edit cancelled"},
		{[]string{"replace", "-f", spec}, "No change: cluster " + name + " already holds what"}, // spec is what get printed
		{[]string{"update", "cluster"}, "Will create resources"},
		{[]string{"graph"}, "digraph"},
		{[]string{"export", "kubeconfig"}, "error: run `kubeup update cluster " + name + " --yes` first"},
		{[]string{"delete", "cluster"}, "Will delete cluster " + name},
	} {
		for _, form := range [][]string{{name}, {"--name", name}, {name, "--name", name}} {
			args := append(append([]string{}, tc.cmd...), form...)
			out, stderr, err := kubeup(t, state, args...)
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("kubeup %s: %v, want an error with %q", strings.Join(args, " "), err, want)
				}
				continue
			}
			if err != nil || !strings.Contains(out, tc.want) || strings.Contains(out, "other.example.com") {
				t.Errorf("kubeup %s: %v, printed\n%s%s\nwant %q about %s alone", strings.Join(args, " "), err, out, stderr, tc.want, name)
			}
		}
		path := strings.Fields(strings.Join(tc.cmd, " "))
		args := append(append([]string{}, path...), name, "--name", "other.example.com")
		if _, _, err := kubeup(t, state, args...); err == nil || !strings.Contains(err.Error(), `NAME "demo.example.com" and --name "other.example.com" name different clusters`) {
			t.Errorf("kubeup %s: %v, want NAME and --name refused as different", strings.Join(args, " "), err)
		}
		if tc.cmd[0] == "get" && tc.cmd[1] == "cluster" || tc.cmd[0] == "replace" {
			continue // without a name: every cluster, or the file's
		}
		wantHow := "needs the cluster's name: kubeup " + strings.Join(tc.cmd, " ") + " NAME, or --name NAME"
		if tc.cmd[0] == "get" && tc.cmd[1] == "instancegroups" { // NAME is a group's, the cluster's is --name
			wantHow = "needs the cluster's name: kubeup get instancegroups --name CLUSTER"
		}
		if _, _, err := kubeup(t, state, tc.cmd...); err == nil || !strings.Contains(err.Error(), wantHow) {
			t.Errorf("kubeup %s: %v, want to be told to give NAME or --name", strings.Join(tc.cmd, " "), err)
		}
	}
	for _, args := range [][]string{{"__complete", "update", "cluster", ""}, {"__complete", "graph", "--name", ""}, {"__complete", "export", "kubeconfig", "d"}} {
		if out := mustKubeup(t, state, args...); !strings.Contains(out, name+"\n") || !strings.Contains(out, ":4\n") {
			t.Errorf("kubeup %s completes to\n%s\nwant the clusters of the store, and no files", strings.Join(args, " "), out)
		}
	}
	if _, _, err := kubeup(t, state, "replace", "-f", spec, "--name", "other.example.com"); err == nil || !strings.Contains(err.Error(), `holds cluster "demo.example.com", not "other.example.com"`) {
		t.Errorf("replace -f of another cluster's spec with --name: %v", err)
	}
	if _, _, err := kubeup(t, state, "create", "cluster", "--cloud", "local", "--zones", "a"); err == nil || !strings.Contains(err.Error(), "kubeup create cluster NAME, or --name NAME") {
		t.Errorf("create without a name: %v", err)
	}
}

// TestNoEscapeCodes: kubeup colours nothing, on a terminal or not: no ANSI escape code in what its commands
// print, results, errors and help alike.
func TestNoEscapeCodes(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	for _, args := range [][]string{
		{"create", "cluster", "demo.example.com", "--cloud", "local", "--zones", "a"},
		{"get", "clusters"},
		{"get", "cluster", "demo.example.com", "--full", "-o", "yaml"},
		{"update", "cluster", "demo.example.com"},
		{"update", "cluster", "demo.example.com", "-o", "json"},
		{"update", "clsuter", "demo.example.com"},
		{"delete", "cluster", "demo.example.com"},
		{"update", "cluster", "--help"},
		{},
	} {
		out, stderr, err := kubeup(t, state, args...)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if strings.Contains(out+stderr+msg, "\x1b") {
			t.Errorf("kubeup %s printed an escape code:\n%q\n%q\n%q", strings.Join(args, " "), out, stderr, msg)
		}
	}
}
