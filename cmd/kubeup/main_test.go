package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// kubeup runs the command in-process against the state store dir and returns its stdout and stderr.
func kubeup(t *testing.T, state string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if state != "" {
		args = append([]string{"--state", "file://" + state}, args...)
	}
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func mustKubeup(t *testing.T, state string, args ...string) string {
	t.Helper()
	out, stderr, err := kubeup(t, state, args...)
	if err != nil {
		t.Fatalf("kubeup %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "version", args: []string{"version"}, want: "kubeup version dev\n"},
		{name: "root prints help", args: nil, want: "Usage:\n  kubeup [command]"},
		{name: "completion bash", args: []string{"completion", "bash"}, want: "bash completion V2 for kubeup"},
		{name: "completion zsh", args: []string{"completion", "zsh"}, want: "#compdef kubeup"},
		{name: "completion fish", args: []string{"completion", "fish"}, want: "complete -c kubeup"},
		{name: "create needs a name", args: []string{"create", "cluster", "--cloud", "local", "--zones", "a"}, wantErr: "needs the cluster's name"},
		{name: "create needs a cloud", args: []string{"create", "cluster", "--name", "x.example.com", "--zones", "a"}, wantErr: "--cloud is required"},
		{name: "create takes aws, and says all an aws cluster lacks", args: []string{"create", "cluster", "--name", "x.example.com", "--cloud", "aws", "--zones", "us-east-1a"},
			wantErr: "an aws cluster's store must be s3://BUCKET (set KUBEUP_STATE_STORE or --state to an s3:// URL)\n  spec.aws.vpcID: required: the id of the VPC the cluster runs in (vpc-...; kubeup create cluster --vpc)"},
		{name: "create refuses a flag of another cloud", args: []string{"create", "cluster", "--name", "x.example.com", "--cloud", "local", "--zones", "a", "--vpc", "vpc-0123456789abcdef0"},
			wantErr: "--vpc is for --cloud aws, not --cloud local"},
		{name: "create takes gce, and says all a gce cluster lacks", args: []string{"create", "cluster", "--name", "x.example.com", "--cloud", "gce", "--zones", "europe-west1-b", "--project", "p", "--dry-run"},
			wantErr: "create cluster: 4 problems:\n  spec.configBase: \"file://"},
		{name: "create refuses a gce flag on another cloud", args: []string{"create", "cluster", "--name", "x.example.com", "--cloud", "aws", "--zones", "us-east-1a", "--network", "default"},
			wantErr: "--network is for --cloud gce, not --cloud aws"},
		{name: "create refuses a cluster without a control plane", args: []string{"create", "cluster", "--name", "x.example.com", "--cloud", "local", "--zones", "a", "--control-plane-count", "0"},
			wantErr: "--control-plane-count 0: a cluster needs a control plane to run its API and etcd: use 1, 3 or 5"},
		{name: "a name longer than DNS allows is refused before the store is read", args: []string{"get", "cluster", strings.Repeat("x", 300) + ".example.com"},
			wantErr: "is longer than 253 characters"},
		{name: "update needs a name", args: []string{"update", "cluster"}, wantErr: "kubeup update cluster needs the cluster's name: kubeup update cluster NAME, or --name NAME"},
		{name: "unknown target", args: []string{"update", "cluster", "x.example.com", "--target", "terraform"}, wantErr: `--target "terraform": want direct or dryrun`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := kubeup(t, t.TempDir(), tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("kubeup %q: error %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("kubeup %q: %v", tt.args, err)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("kubeup %q printed:\n%s\nwant it to contain %q", tt.args, out, tt.want)
			}
		})
	}
}

// treeSums maps every file under dir to its sha256: what "byte-for-byte unchanged" is checked against. A volume
// image (20 GiB, sparse) is stood for by its size and modification time instead of read.
func treeSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".img") {
			info, err := d.Info()
			if err != nil {
				return err
			}
			sums[p] = fmt.Sprintf("image of %d bytes, modified %v", info.Size(), info.ModTime().UnixNano())
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		sums[p] = hex.EncodeToString(s[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

func sameSums(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestLocalClusterLifecycle is the acceptance flow of the local provider: create, get --full, update (dry run),
// update --yes, update (no changes), replace with a broken spec (refused, store unchanged), delete --yes.
func TestLocalClusterLifecycle(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "s")
	const name = "demo.example.com"

	out := mustKubeup(t, state, "create", "cluster", "--name", name, "--cloud", "local", "--zones", "a,b,c", "--control-plane-count", "3")
	if !strings.Contains(out, "Created cluster demo.example.com") {
		t.Errorf("create printed:\n%s", out)
	}
	if _, _, err := kubeup(t, state, "create", "cluster", "--name", name, "--cloud", "local", "--zones", "a"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second create: %v, want already exists", err)
	}

	out = mustKubeup(t, state, "get", "clusters")
	if !strings.Contains(out, "demo.example.com  local  a,b,c") {
		t.Errorf("get clusters printed:\n%s", out)
	}
	out = mustKubeup(t, state, "get", "instancegroups", "--name", name)
	for _, ig := range []string{"control-plane-a", "control-plane-b", "control-plane-c", "nodes"} {
		if !strings.Contains(out, ig) {
			t.Errorf("get instancegroups lacks %s:\n%s", ig, out)
		}
	}

	full := mustKubeup(t, state, "get", "cluster", name, "--full", "-o", "yaml")
	for _, want := range []string{"kubeAPIServer:", "etcdServers:", "zone: a", "zone: b", "zone: c", "instanceGroup: control-plane-c"} {
		if !strings.Contains(full, want) {
			t.Errorf("get --full lacks %q", want)
		}
	}

	plan := mustKubeup(t, state, "update", "cluster", name)
	if !strings.Contains(plan, "Will create resources") || !strings.Contains(plan, "Must specify --yes") {
		t.Errorf("update printed:\n%s", plan)
	}
	if n := strings.Count(plan, "\n  LocalVolume/"); n != 6 {
		t.Errorf("update lists %d volumes, want 6 (main and events times 3)", n)
	}
	if _, err := os.Stat(filepath.Join(base, "s-local", "volumes")); !os.IsNotExist(err) {
		t.Errorf("the dry run created the pool: %v", err)
	}

	out = mustKubeup(t, state, "update", "cluster", name, "--yes")
	if !strings.Contains(out, "Applied") {
		t.Errorf("update --yes printed:\n%s", out)
	}
	images, _ := filepath.Glob(filepath.Join(base, "s-local", "volumes", "*.img"))
	if len(images) != 6 {
		t.Errorf("%d volume images after update --yes, want 6: %v", len(images), images)
	}
	if out := mustKubeup(t, state, "update", "cluster", name); !strings.Contains(out, "No changes need to be applied") {
		t.Errorf("update after --yes printed:\n%s", out)
	}

	// A broken spec is refused with every problem, and the store is untouched byte for byte.
	before := treeSums(t, base)
	bad := filepath.Join(base, "bad.yaml")
	os.WriteFile(bad, []byte(`apiVersion: kubeup.dev/v1alpha1
kind: Cluster
metadata:
  name: demo.example.com
spec:
  cloudProvider: local
  zones: [a, b, c]
  kubernetesVersion: latest
  networking:
    podCIDR: 100.64.0.0/12
  etcdClusters:
  - name: main
    members:
    - {name: a, instanceGroup: control-plane-a}
    - {name: b, instanceGroup: control-plane-b, zone: z}
    - {name: c, instanceGroup: control-plane-x}
    - {name: d, instanceGroup: control-plane-c}
`), 0o644)
	_, _, err := kubeup(t, state, "replace", "-f", bad)
	if err == nil {
		t.Fatal("replace of a broken spec succeeded")
	}
	for _, want := range []string{
		"spec.kubernetesVersion:",
		"spec.networking.podCIDR:",
		"spec.etcdClusters[0].members: 4 members",
		"spec.etcdClusters[0].members[1].zone:",
		"spec.etcdClusters[0].members[2].instanceGroup:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("replace error lacks %q:\n%v", want, err)
		}
	}
	os.WriteFile(bad, []byte("kind: Cluster\n  spec: [\n"), 0o644)
	if _, _, err := kubeup(t, state, "replace", "-f", bad); err == nil || !strings.Contains(err.Error(), "malformed YAML") {
		t.Errorf("replace of malformed YAML: %v", err)
	}
	os.Remove(bad)
	if after := treeSums(t, base); !sameSums(before, after) {
		t.Errorf("a refused replace changed the store")
	}

	out = mustKubeup(t, state, "delete", "cluster", name)
	if !strings.Contains(out, "Must specify --yes") || strings.Count(out, "LocalVolume/") != 6 {
		t.Errorf("delete dry run printed:\n%s", out)
	}
	if after := treeSums(t, base); !sameSums(before, after) {
		t.Errorf("delete without --yes changed something")
	}
	mustKubeup(t, state, "delete", "cluster", name, "--yes")
	for p := range treeSums(t, base) {
		t.Errorf("left after delete: %s", p)
	}
	if _, err := os.Stat(filepath.Join(base, "s-local")); !os.IsNotExist(err) {
		t.Errorf("the local provider's directory is left after delete: %v", err)
	}
	if _, _, err := kubeup(t, state, "get", "cluster", name); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("get after delete: %v", err)
	}
}

// TestGetOutput checks the forms of get: a JSON list for a listing (so that two clusters are valid JSON), one
// object for a named cluster, the version a cluster runs in the table, and an unknown -o refused even when
// there is nothing to print.
func TestGetOutput(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	if _, _, err := kubeup(t, state, "get", "clusters", "-o", "xml"); err == nil || !strings.Contains(err.Error(), `-o "xml": want table, yaml or json`) {
		t.Errorf("get clusters -o xml in an empty store: %v", err)
	}
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := kubeup(t, state, "get", "clusters", "-o", "json"); err != nil || strings.TrimSpace(out) != "[]" || !strings.Contains(stderr, "No clusters in state store file://"+state) {
		t.Errorf("get clusters -o json in an empty store: %v, printed %q and on stderr %q; want [] and that the store is empty", err, out, stderr)
	}
	for _, name := range []string{"a.example.com", "b.example.com"} {
		mustKubeup(t, state, "create", "cluster", "--name", name, "--cloud", "local", "--zones", "a")
	}
	var list []model.Cluster
	if err := json.Unmarshal([]byte(mustKubeup(t, state, "get", "clusters", "-o", "json")), &list); err != nil || len(list) != 2 {
		t.Errorf("get clusters -o json: %v, %d clusters; want a JSON list of 2", err, len(list))
	}
	var one model.Cluster
	if err := json.Unmarshal([]byte(mustKubeup(t, state, "get", "cluster", "a.example.com", "-o", "json")), &one); err != nil || one.Metadata.Name != "a.example.com" {
		t.Errorf("get cluster a.example.com -o json: %v, %q; want the cluster as one object", err, one.Metadata.Name)
	}
	var igs []model.InstanceGroup
	if err := json.Unmarshal([]byte(mustKubeup(t, state, "get", "instancegroups", "--name", "a.example.com", "-o", "json")), &igs); err != nil || len(igs) != 2 {
		t.Errorf("get instancegroups -o json: %v, %d groups; want a JSON list of 2", err, len(igs))
	}
	if out := mustKubeup(t, state, "get", "clusters"); !strings.Contains(out, "a.example.com  local  a      "+model.DefaultKubernetesVersion) {
		t.Errorf("get clusters does not show the version the cluster runs:\n%s", out)
	}
	if _, _, err := kubeup(t, state, "create", "cluster", "--name", "c.example.com", "--cloud", "local", "--zones", "a", "--dry-run", "-o", "table"); err == nil || !strings.Contains(err.Error(), `want yaml or json`) {
		t.Errorf("create --dry-run -o table: %v", err)
	}
}
