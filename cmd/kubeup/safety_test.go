package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// kubeupIn runs the command with stdin.
func kubeupIn(t *testing.T, state string, stdin io.Reader, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(stdin)
	cmd.SetArgs(append([]string{"--state", "file://" + state}, args...))
	err = cmd.Execute()
	return out.String(), err
}

// TestLostUpdate: a spec saved with `get -o yaml`, then a concurrent `edit`, then `replace -f` of the saved
// spec silently reverted the edit. The saved spec carries the resourceVersion it was read at: replace refuses
// it and says how to merge; --force overwrites knowingly; a spec without resourceVersion replaces
// unconditionally.
func TestLostUpdate(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", "--name", name, "--cloud", "local", "--zones", "a")
	saved := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
	if !strings.Contains(saved, "\n  resourceVersion: ") {
		t.Errorf("get -o yaml prints no metadata.resourceVersion:\n%s", saved)
	}
	file := filepath.Join(dir, "demo.yaml")
	mine := strings.Replace(saved, "  cloudProvider: local\n", "  cloudProvider: local\n  dnsZone: example.com\n", 1)
	if err := os.WriteFile(file, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Setenv("KUBE_EDITOR", `sed -i 's/^  cloudProvider: local$/  cloudProvider: local\n  kubernetesVersion: 1.34.1/'`)
	if out := mustKubeup(t, state, "edit", "cluster", name); !strings.Contains(out, "Updated the spec") {
		t.Fatalf("edit printed:\n%s", out)
	}
	edited := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
	if !strings.Contains(edited, "kubernetesVersion: 1.34.1") {
		t.Fatalf("the edit did not land:\n%s", edited)
	}

	_, _, err := kubeup(t, state, "replace", "-f", file)
	for _, want := range []string{"cluster demo.example.com was changed by someone else since " + file + " was read",
		"nothing was written", "kubeup get cluster demo.example.com -o yaml", "re-apply your change", "--force"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("replace -f of a stale spec: %v, want it refused with %q", err, want)
		}
	}
	if got := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml"); got != edited {
		t.Errorf("the refused replace changed the spec:\n%s", got)
	}

	mustKubeup(t, state, "replace", "-f", file, "--force")
	got := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml")
	if strings.Contains(got, "kubernetesVersion: 1.34.1") || !strings.Contains(got, "dnsZone: example.com") {
		t.Errorf("replace --force did not overwrite the edit:\n%s", got)
	}
	stored, err := os.ReadFile(filepath.Join(state, name, "config"))
	if err != nil || bytes.Contains(stored, []byte("resourceVersion")) {
		t.Errorf("the stored spec holds a resourceVersion (%v):\n%s", err, stored)
	}

	// A spec kept by hand, without resourceVersion, replaces whatever is stored.
	var byHand []string
	for _, l := range strings.Split(strings.Replace(mine, "dnsZone: example.com", "dnsZone: demo.example.com", 1), "\n") {
		if !strings.HasPrefix(l, "  resourceVersion:") {
			byHand = append(byHand, l)
		}
	}
	if out, err := kubeupIn(t, state, strings.NewReader(strings.Join(byHand, "\n")), "replace", "-f", "-"); err != nil {
		t.Errorf("replace of a spec without resourceVersion: %v\n%s", err, out)
	}
	if got := mustKubeup(t, state, "get", "cluster", name, "-o", "yaml"); !strings.Contains(got, "dnsZone: demo.example.com") {
		t.Errorf("after the replace of a spec without resourceVersion:\n%s", got)
	}
}

// TestUnreadableClusterCLI: a cluster whose stored spec a newer kubeup wrote does not hide the others from get
// clusters; it is shown as unreadable, with the reason; it can be replaced and deleted.
func TestUnreadableClusterCLI(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	for _, name := range []string{"a.example.com", "b.example.com"} {
		mustKubeup(t, state, "create", "cluster", "--name", name, "--cloud", "local", "--zones", "a")
	}
	saved := mustKubeup(t, state, "get", "cluster", "b.example.com", "-o", "yaml") + "---\n" +
		mustKubeup(t, state, "get", "instancegroups", "--name", "b.example.com", "-o", "yaml")
	spec := filepath.Join(state, "b.example.com", "config")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, bytes.Replace(data, []byte("\nspec:\n"), []byte("\nspec:\n  frobnicator: {}\n"), 1), 0o600); err != nil {
		t.Fatal(err)
	}

	out, _, err := kubeup(t, state, "get", "clusters")
	if !strings.Contains(out, "a.example.com  local") || !strings.Contains(out, "b.example.com  (unreadable)") {
		t.Errorf("get clusters printed:\n%s", out)
	}
	if err == nil || !strings.Contains(err.Error(), "cluster b.example.com: its stored spec cannot be read") ||
		!strings.Contains(err.Error(), "spec.frobnicator: unknown field (written by a newer kubeup? upgrade kubeup)") {
		t.Errorf("get clusters: %v, want the reason b.example.com cannot be read", err)
	}
	if _, _, err := kubeup(t, state, "get", "cluster", "b.example.com", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "upgrade kubeup") {
		t.Errorf("get cluster b.example.com: %v", err)
	}

	file := filepath.Join(t.TempDir(), "b.yaml")
	if err := os.WriteFile(file, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kubeup(t, state, "replace", "-f", file); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("replace of an unreadable cluster with a spec read before: %v, want it refused", err)
	}
	out = mustKubeup(t, state, "replace", "-f", file, "--force")
	if !strings.Contains(out, "Its stored spec could not be read, and nothing of it was kept") {
		t.Errorf("replace --force of an unreadable cluster printed:\n%s", out)
	}
	if out := mustKubeup(t, state, "get", "clusters"); !strings.Contains(out, "b.example.com  local") {
		t.Errorf("get clusters after the replace:\n%s", out)
	}

	if err := os.WriteFile(spec, []byte("\x00corrupt"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = mustKubeup(t, state, "delete", "cluster", "b.example.com", "--yes")
	if !strings.Contains(out, "cannot be read") || !strings.Contains(out, "only its state is deleted") {
		t.Errorf("delete of an unreadable cluster printed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(state, "b.example.com")); !os.IsNotExist(err) {
		t.Errorf("b.example.com is left after its delete: %v", err)
	}
	if out := mustKubeup(t, state, "get", "clusters"); !strings.Contains(out, "a.example.com") || strings.Contains(out, "b.example.com") {
		t.Errorf("get clusters after the delete:\n%s", out)
	}
}

// TestReplaceInputSize: a 57 MiB spec took 1m22s and 2.8 GB; it is refused before it is parsed, naming the
// file, its size and the limit, and stdin is read no further than the limit.
func TestReplaceInputSize(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 57<<20); err != nil { // sparse: nothing to write
		t.Fatal(err)
	}
	_, _, err := kubeup(t, state, "replace", "-f", big)
	if want := big + ": 59768832 bytes (57.0 MiB) is over the limit of 1048576 bytes (1 MiB) for a spec"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("replace -f of a 57 MiB file: %v, want %q", err, want)
	}

	stdin := &endless{}
	_, err = kubeupIn(t, state, stdin, "replace", "-f", "-")
	if want := "stdin: more than 1048576 bytes (1 MiB), the limit for a spec"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("replace -f - of an endless stream: %v, want %q", err, want)
	}
	if stdin.n > model.MaxSpecBytes+1 {
		t.Errorf("replace read %d bytes of stdin, want at most %d", stdin.n, model.MaxSpecBytes+1)
	}
}

// endless is a stdin that never ends, counting what is read of it.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '#'
	}
	e.n += len(p)
	return len(p), nil
}

// TestDetailedExitCode: update --detailed-exitcode exits 2 when the dry run finds changes, 0 when none, 1 on
// an error; with --yes, 0 after a successful apply.
func TestDetailedExitCode(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", "--name", name, "--cloud", "local", "--zones", "a")
	steps := []struct {
		args []string
		want int
	}{
		{[]string{"update", "cluster", name, "--detailed-exitcode"}, 2},
		{[]string{"update", "cluster", name, "--detailed-exitcode", "-o", "json"}, 2},
		{[]string{"update", "cluster", name, "--detailed-exitcode", "--target", "dryrun"}, 2},
		{[]string{"update", "cluster", name, "--detailed-exitcode", "--yes", "--target", "dryrun"}, 1}, // a contradiction: refused
		{[]string{"update", "cluster", name}, 0},
		{[]string{"update", "cluster", "absent.example.com", "--detailed-exitcode"}, 1},
		{[]string{"update", "cluster", name, "--detailed-exitcode", "--yes"}, 0},
		{[]string{"update", "cluster", name, "--detailed-exitcode"}, 0},
	}
	for _, s := range steps {
		out, _, err := kubeup(t, state, s.args...)
		if got := exitCode(err); got != s.want {
			t.Errorf("kubeup %s: exit status %d (%v), want %d\n%s", strings.Join(s.args, " "), got, err, s.want, out)
		}
	}
}

// TestDeleteLeavesNoTemporaryFiles: a kubeup killed while it wrote the state store left a temporary file,
// which kept the cluster's directory after delete cluster --yes.
func TestDeleteLeavesNoTemporaryFiles(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", "--name", name, "--cloud", "local", "--zones", "a")
	mustKubeup(t, state, "update", "cluster", name, "--yes")
	for _, p := range []string{".config.tmp-1234", "nodeup/.nodes.tmp-99"} {
		if err := os.WriteFile(filepath.Join(state, name, p), []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustKubeup(t, state, "delete", "cluster", name, "--yes")
	if entries, err := os.ReadDir(state); err != nil || len(entries) != 0 {
		t.Errorf("left in the state store after delete: %v (%v)", entries, err)
	}
}
