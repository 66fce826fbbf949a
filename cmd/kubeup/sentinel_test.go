package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

// sentinelTSIG is a TSIG secret (base64, as tsig-keygen prints it) that a user writes where its file's path
// belongs, spec.local.dns.tsigSecretFile: the one place of the spec a secret can land. It starts with '/', as one
// base64 secret in 64 does, so that it passes for an absolute path until its '=' padding.
const sentinelTSIG = "/2VudGluZWwtdHNpZy1zZWNyZXQtb2Yta3ViZXVwLTdmM2E5Yw=="

// TestSentinelSecretsNeverShown runs the CLI through a cluster's life on the local provider, every command with
// --verbose, and searches all it printed (stdout, stderr, the errors, the default logger, and what anything wrote
// to the process's own stdout and stderr) for every private key the keystore holds at the end (the CAs', the
// service-account key, every issued certificate's) and for a TSIG secret the user put in the spec: none is there,
// in any form (a line of the PEM's body, the base64 of the PEM as a kubeconfig carries it at any alignment, the
// private scalar in decimal, hex or base64). The commands: create; get -o yaml, -o json, --full, instance groups;
// update as a dry run (text and -o json), a failing update --yes (the zone file cannot be written), update --yes,
// a second update as a dry run and --yes; replace and edit refused for an invalid spec and for the TSIG secret in
// the spec; graph; export kubeconfig; delete as a dry run. The state store's objects that are not secrets (the
// spec, the complete spec) and the local provider's files hold no key either, and the secret objects are 0600.
//
// test/e2e's control-plane test searches the output of a running cluster (nodeup, protokube, the components);
// model's TestKeystoreSentinel the cloud graph's plans and logs. This is the operator's side: every command.
func TestSentinelSecretsNeverShown(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "s")
	const name = "sentinel.example.com"
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("KUBECONFIG", filepath.Join(base, "kubeconfig"))
	var defaultLogs bytes.Buffer
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&defaultLogs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(saved) })

	var shown strings.Builder // everything printed, command by command
	run := func(args ...string) (string, error) {
		t.Helper()
		var stdout, stderr string
		var err error
		process := captureProcessOutput(t, func() {
			stdout, stderr, err = kubeup(t, state, append([]string{"--verbose"}, args...)...)
		})
		fmt.Fprintf(&shown, "$ kubeup %s\n%s%s%s", strings.Join(args, " "), stdout, stderr, process)
		if err != nil {
			fmt.Fprintf(&shown, "Error: %v\n", err)
		}
		return stdout, err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("kubeup %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	refused := func(want string, args ...string) {
		t.Helper()
		if _, err := run(args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("kubeup %s: %v, want it refused with %q", strings.Join(args, " "), err, want)
		}
	}

	must("create", "cluster", "--name", name, "--cloud", "local", "--zones", "a,b,c", "--control-plane-count", "3")
	gets := func() {
		t.Helper()
		must("get", "clusters")
		must("get", "cluster", name, "-o", "yaml")
		must("get", "cluster", name, "-o", "json")
		must("get", "cluster", name, "--full", "-o", "yaml")
		must("get", "instancegroups", "--name", name, "-o", "yaml")
		must("get", "instancegroups", "--name", name, "--full", "-o", "json")
	}
	gets()
	var full model.Cluster
	if err := json.Unmarshal([]byte(must("get", "cluster", name, "--full", "-o", "json")), &full); err != nil || full.Spec.Local == nil {
		t.Fatalf("get cluster --full -o json: %v, %+v", err, full.Spec.Local)
	}
	must("update", "cluster", name)
	must("update", "cluster", name, "-o", "json")

	// A run that fails: the zone file is a directory. The keystore's tasks do not depend on DNS.
	zoneFile := filepath.FromSlash(full.Spec.Local.ZoneFile)
	if err := os.MkdirAll(zoneFile, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := run("update", "cluster", name, "--yes"); err == nil {
		t.Errorf("update --yes with a directory for the zone file %s succeeded", zoneFile)
	}
	if err := os.Remove(zoneFile); err != nil {
		t.Fatal(err)
	}
	must("update", "cluster", name, "--yes")
	for _, args := range [][]string{{"update", "cluster", name}, {"update", "cluster", name, "-o", "json"}} {
		if out := must(args...); !strings.Contains(out, "No changes") && !strings.Contains(out, `"create": 0`) {
			t.Errorf("kubeup %s after update --yes plans changes:\n%s", strings.Join(args, " "), out)
		}
	}
	gets()

	// A change that issues a certificate again: a second update, planned then applied.
	spec := must("get", "cluster", name, "-o", "yaml")
	file := filepath.Join(base, "cluster.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Replace(spec, "\nspec:\n", "\nspec:\n  networking:\n    serviceClusterIPRange: 100.65.0.0/16\n", 1))
	must("replace", "-f", file)
	if out := must("update", "cluster", name); !strings.Contains(out, "Keypair/"+model.KeypairKubeAPIServer) {
		t.Errorf("a new service range does not issue kube-apiserver's certificate again:\n%s", out)
	}
	must("update", "cluster", name, "-o", "json")
	must("update", "cluster", name, "--yes")
	must("update", "cluster", name)

	// Refused specs: invalid, and the TSIG secret where its file's path belongs.
	spec = must("get", "cluster", name, "-o", "yaml")
	withTSIG := strings.Replace(spec, "\nspec:\n", "\nspec:\n  local:\n    dns:\n      provider: rfc2136\n      server: 127.0.0.1:53\n"+
		"      tsigKeyName: kubeup\n      tsigAlgorithm: hmac-sha256\n      tsigSecretFile: "+sentinelTSIG+"\n", 1)
	if withTSIG == spec {
		t.Fatalf("no spec: line in\n%s", spec)
	}
	write(withTSIG)
	refused("spec.local.dns.tsigSecretFile", "replace", "-f", file)
	write(strings.ReplaceAll(withTSIG, name, "other.example.com"))
	refused("spec.local.dns.tsigSecretFile", "create", "-f", file)
	write(strings.Replace(spec, "\nspec:\n", "\nspec:\n  kubernetesVersion: latest\n  frobnicate: "+sentinelTSIG+"\n", 1))
	refused("spec.frobnicate", "replace", "-f", file)
	t.Setenv("KUBE_EDITOR", `sed -i 's|^spec:$|spec:\n  local:\n    dns:\n      provider: rfc2136\n      server: 127.0.0.1:53\n      tsigKeyName: kubeup\n      tsigAlgorithm: hmac-sha256\n      tsigSecretFile: `+sentinelTSIG+`|'`)
	refused("spec.local.dns.tsigSecretFile", "edit", "cluster", name)
	t.Setenv("KUBE_EDITOR", `sed -i 's|^spec:$|spec:\n  kubernetesVersion: latest|'`)
	refused("spec.kubernetesVersion", "edit", "cluster", name)

	must("graph", name)
	must("export", "kubeconfig", name, "--admin=1h")
	must("delete", "cluster", name)

	keys := keystoreKeys(t, filepath.Join(state, name))
	if n := len(keys); n < 20 {
		t.Fatalf("%d private keys in the keystore, want every keypair of a 3-member cluster's", n)
	}
	printed := shown.String() + defaultLogs.String()
	for _, forbidden := range []string{"PRIVATE KEY", base64.StdEncoding.EncodeToString([]byte("-----BEGIN PRIVATE KE")), sentinelTSIG, sentinelTSIG[1:44]} {
		if strings.Contains(printed, forbidden) {
			t.Errorf("what kubeup printed holds %q", forbidden)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(keys)) {
		for _, form := range keys[n] {
			if strings.Contains(printed, form) {
				t.Errorf("what kubeup printed holds the private key of %s (%q)", n, form)
			}
		}
	}
	t.Logf("sentinel: %d private keys and a TSIG secret searched for in %d bytes printed by %d commands",
		len(keys), len(printed), strings.Count(shown.String(), "$ kubeup "))

	// The objects that are not secrets, and the local provider's files, hold no key; the secret ones are 0600.
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".img") || p == filepath.Join(base, "kubeconfig") {
			return err // a volume image is 20 GiB of nothing; the kubeconfig holds the admin key by design
		}
		rel, _ := filepath.Rel(state, p)
		secret := strings.HasPrefix(rel, name+"/pki/") || strings.HasPrefix(rel, name+"/nodeup/")
		info, err := d.Info()
		if err != nil {
			return err
		}
		if secret {
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s holds keys and has mode %v, want 0600", p, info.Mode().Perm())
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for n, forms := range keys {
			for _, form := range forms {
				if bytes.Contains(b, []byte(form)) {
					t.Errorf("%s holds the private key of %s", p, n)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The search finds what it looks for: the control plane's role's configuration holds keys in their forms.
	conf, err := os.ReadFile(filepath.Join(state, name, "nodeup", "ControlPlane.role"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, forms := range keys {
		for _, form := range forms {
			if bytes.Contains(conf, []byte(form)) {
				found++
				break
			}
		}
	}
	if found < 10 || !bytes.Contains(conf, []byte("PRIVATE KEY")) {
		t.Fatalf("the sentinel search finds %d keys in a control-plane node's configuration: the test is broken", found)
	}
}

// keystoreKeys reads every keypair of the cluster's keystore (dir is the cluster's directory of a file:// store)
// and returns, for each, the forms its private key could be printed in: each line of its PEM's body (the DER in
// base64), the base64 of its whole PEM at each of the three alignments it can have inside a longer base64 text
// (past the bytes every P-256 key's PEM shares), and its private scalar in decimal (fmt's %v of the key), hex and
// base64.
func keystoreKeys(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "pki", "*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if tok, err := pkitasks.DecodeToken(b); err == nil {
			_, secret, _ := tok.TokenParts()
			out[filepath.Base(f)] = []string{secret.Reveal()} // the bootstrap token: its secret, however quoted
			continue
		}
		is, err := pkitasks.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		keyPEM := is.KeyPEM.Reveal()
		var forms []string
		for _, line := range strings.Split(keyPEM, "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				forms = append(forms, line)
			}
		}
		for pad := range 3 {
			b64 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", pad) + keyPEM))
			forms = append(forms, b64[120:176])
		}
		var d *big.Int
		switch k := is.Key.(type) {
		case *ecdsa.PrivateKey:
			scalar, err := k.Bytes()
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			d = new(big.Int).SetBytes(scalar)
		case *rsa.PrivateKey:
			d = k.D
		default:
			t.Fatalf("%s: a key of type %T", f, is.Key)
		}
		forms = append(forms, d.String(), hex.EncodeToString(d.Bytes()), base64.RawURLEncoding.EncodeToString(d.Bytes()),
			base64.StdEncoding.EncodeToString(d.Bytes()))
		out[filepath.Base(f)] = forms
	}
	return out
}

// captureProcessOutput runs f with the process's stdout and stderr going to a pipe, and returns what was written
// to them: what a command prints without going through cobra's writers is searched too.
func captureProcessOutput(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	func() {
		defer func() { os.Stdout, os.Stderr = stdout, stderr }()
		f()
	}()
	w.Close()
	out := <-done
	r.Close()
	return out
}
