package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/model"
)

// TestRoleSpellingsAndRepeatedNames: graph --role takes the instance groups' spelling of a role as well as its
// own, and a group named twice is shown once.
func TestRoleSpellingsAndRepeatedNames(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	for _, pair := range [][2]string{{"control-plane", "ControlPlane"}, {"node", "Node"}} {
		if a, b := mustKubeup(t, state, "graph", name, "--role", pair[0]), mustKubeup(t, state, "graph", name, "--role", pair[1]); a != b || !strings.Contains(a, "digraph") {
			t.Errorf("graph --role %s and --role %s differ:\n%s\n---\n%s", pair[0], pair[1], a, b)
		}
	}
	if _, _, err := kubeup(t, state, "graph", name, "--role", "master"); err == nil || !strings.Contains(err.Error(), "want control-plane or node") {
		t.Errorf("graph --role master: %v", err)
	}
	table := mustKubeup(t, state, "get", "ig", "nodes", "nodes", "--name", name)
	if n := strings.Count(table, "\nnodes "); n != 1 {
		t.Errorf("get ig nodes nodes shows the group %d times:\n%s", n, table)
	}
}

// TestEditKindAndEmpty: an edit that changes the kind of what it shows is refused for that, in one line (not as
// the other kind's unknown fields), and the edit kept; an emptied file cancels the edit, as kubectl edit's does.
func TestEditKindAndEmpty(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	before := treeSums(t, state)

	t.Setenv("KUBE_EDITOR", `sed -i -e "s/^kind: InstanceGroup$/kind: Cluster/"`)
	_, _, err := kubeup(t, state, "edit", "ig", "nodes", "--name", name)
	if err == nil || !strings.Contains(err.Error(), "kind: Cluster: an edit changes the object it shows, a InstanceGroup, and cannot make it another kind: set kind back to InstanceGroup") ||
		strings.Contains(err.Error(), "unknown field") {
		t.Errorf("edit ig changing the kind: %v", err)
	}
	if _, kept, ok := strings.Cut(err.Error(), "your edit is kept in "); ok {
		t.Cleanup(func() { os.Remove(strings.Fields(kept)[0]) })
	} else {
		t.Errorf("the edit is not kept: %v", err)
	}

	t.Setenv("KUBE_EDITOR", `sh -c ': > "$1"' sh`)
	if out, _, err := kubeup(t, state, "edit", "cluster", name); err != nil || !strings.Contains(out, "Edit cancelled: no changes made.") {
		t.Errorf("edit cluster emptying the file: %v\n%s", err, out)
	}
	if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
}

// TestCreateControlPlaneGroupNeedsAZone: create instancegroup --role ControlPlane without --zones, in a cluster of
// several zones, is told that first and alone.
func TestCreateControlPlaneGroupNeedsAZone(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a,b,c")
	before := treeSums(t, state)
	_, _, err := kubeup(t, state, "create", "ig", "cp-d", "--name", name, "--role", "ControlPlane")
	if err == nil || !strings.Contains(err.Error(), "--zones is required for a ControlPlane group of a cluster with several zones") ||
		!strings.Contains(err.Error(), "give --zones ZONE, one of a, b, c; nothing was written") || strings.Contains(err.Error(), "problems") {
		t.Errorf("create ig --role ControlPlane without --zones: %v", err)
	}
	if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
	single := filepath.Join(t.TempDir(), "s")
	mustKubeup(t, single, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	if _, _, err := kubeup(t, single, "create", "ig", "cp-b", "--name", name, "--role", "ControlPlane", "--dry-run"); err != nil && strings.Contains(err.Error(), "--zones is required") {
		t.Errorf("a single-zone cluster's ControlPlane group needs no --zones: %v", err)
	}
}

// TestValidateNegativeWait: validate --wait -1s was taken as 0 (validate once); a negative wait is refused, as
// the other duration flags' are, before anything is read.
func TestValidateNegativeWait(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	for _, args := range [][]string{
		{"validate", "cluster", name, "--wait", "-1s"},
		{"validate", "cluster", name, "--wait=-10m", "-o", "json"},
	} {
		out, _, err := kubeup(t, state, args...)
		if exitCode(err) != 1 || out != "" || !strings.Contains(err.Error(), "cannot be negative") || !strings.Contains(err.Error(), "--wait -") {
			t.Errorf("kubeup %s: %v, printed %q; want refused as negative, nothing printed", strings.Join(args, " "), err, out)
		}
	}
}

// TestEchoedInputIsQuotedAndCut: an instance group name with control characters is refused (create ig
// $'a\e[2Jb' echoed the ESC), and what errors repeat of the input is quoted and cut: a 900 KB value was printed
// whole.
func TestEchoedInputIsQuotedAndCut(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	before := treeSums(t, state)

	_, _, err := kubeup(t, state, "create", "ig", "a\x1b[2Jb", "--name", name)
	if err == nil || !strings.Contains(err.Error(), `"a\x1b[2Jb" is not a valid instance group name`) || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("create ig with an ESC in its name: %v", err)
	}

	huge := strings.Repeat("x", 900_000)
	spec := filepath.Join(t.TempDir(), "huge.yaml")
	hugeSpec := strings.Replace(mustKubeup(t, state, "get", "cluster", name, "-o", "yaml"),
		"  cloudProvider: local\n", "  cloudProvider: local\n  kubernetesVersion: "+huge+"\n", 1)
	if !strings.Contains(hugeSpec, huge) {
		t.Fatalf("no spec.cloudProvider to put a huge value after:\n%s", hugeSpec)
	}
	if err := os.WriteFile(spec, []byte(hugeSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"create", "ig", huge, "--name", name},
		{"create", "ig", "a\x1b[2Jb" + huge, "--name", name, "--dry-run"},
		{"get", "ig", huge, "--name", name},
		{"edit", "ig", huge, "--name", name},
		{"delete", "ig", huge, "--name", name, "--yes"},
		{"get", "cluster", huge},
		{"get", "cluster", huge + ".example.com"},
		{"delete", "cluster", huge + ".example.com"},
		{"create", "cluster", huge + ".example.com", "--cloud", "local", "--zones", "a"},
		{"create", "cluster", "x.example.com", "--cloud", huge, "--zones", "a"},
		{"create", "cluster", "x.example.com", "--cloud", "local", "--zones", huge, "--dry-run"},
		{"create", "ig", "b", "--name", name, "--role", huge},
		{"get", "clusters", "-o", huge},
		{"replace", "-f", spec},
	} {
		short := strings.Join(args, " ")
		if len(short) > 80 {
			short = short[:80] + "..."
		}
		out, _, err := kubeup(t, state, args...)
		switch {
		case err == nil:
			t.Errorf("kubeup %s: no error\n%.300s", short, out)
		case len(err.Error()) > 4000 || strings.Contains(err.Error(), strings.Repeat("x", model.MaxEcho+1)):
			t.Errorf("kubeup %s: the error repeats the input whole (%d bytes): %.600s", short, len(err.Error()), err)
		case strings.Contains(err.Error(), "\x1b"):
			t.Errorf("kubeup %s: the error holds an ESC: %q", short, err)
		}
	}
	if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
}

// TestEditReopensOnError: edit quit on a file that did not decode, leaving a /tmp/kubeup-edit-*.yaml behind. As
// kubectl edit, it opens the editor again with the error in a comment block on top; a fixed save is written, a
// save unchanged after the error gives up and keeps the file (saying where); no other end leaves a file.
func TestEditReopensOnError(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	left := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(tmp, "kubeup-edit-*"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// The editor: its first run breaks the YAML; its second checks the error is on top, then (fix) repairs it and
	// changes maxSize, or (giveup) saves it unchanged.
	script := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(script, []byte(`n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT"
case $n in
1) printf 'bad: [\n' >> "$1" ;;
2) head -1 "$1" | grep -q '^# kubeup: your last save was refused' || exit 3
   grep -q '^#   .*malformed YAML' "$1" || exit 4
   if [ "$MODE" = fix ]; then sed -i -e '/^bad: \[$/d' -e 's/^  maxSize: 1$/  maxSize: 3/' "$1"; fi ;;
*) exit 5 ;;
esac
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", "sh "+script)
	// A person at a terminal: the editor is opened again after the refused save.
	was := stdinIsTerminal
	stdinIsTerminal = func() bool { return true }
	t.Cleanup(func() { stdinIsTerminal = was })

	t.Setenv("MODE", "fix")
	t.Setenv("COUNT", filepath.Join(t.TempDir(), "count"))
	if out, _, err := kubeup(t, state, "edit", "ig", "nodes", "--name", name); err != nil || !strings.Contains(out, "Updated instance group nodes") {
		t.Errorf("edit fixed after an error: %v\n%s", err, out)
	}
	if got := mustKubeup(t, state, "get", "ig", "nodes", "--name", name, "-o", "yaml"); !strings.Contains(got, "\n  maxSize: 3\n") {
		t.Errorf("the fixed edit was not written:\n%s", got)
	}
	if l := left(); len(l) != 0 {
		t.Errorf("a successful edit left %v", l)
	}

	before := treeSums(t, state)
	t.Setenv("MODE", "giveup")
	t.Setenv("COUNT", filepath.Join(t.TempDir(), "count"))
	_, _, err := kubeup(t, state, "edit", "cluster", name)
	if err == nil || !strings.Contains(err.Error(), "malformed YAML") || !strings.Contains(err.Error(), "saved unchanged after this error") {
		t.Errorf("edit given up after an error: %v", err)
	} else if _, kept, ok := strings.Cut(err.Error(), "your edit is kept in "); !ok || !slices.Equal(left(), []string{strings.Fields(kept)[0]}) {
		t.Errorf("edit given up: %v; files left %v, want the one it names", err, left())
	}
	if diff := cmp.Diff(before, treeSums(t, state)); diff != "" {
		t.Errorf("the store changed (-before +after):\n%s", diff)
	}
}
