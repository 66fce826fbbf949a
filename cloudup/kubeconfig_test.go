package cloudup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

// appliedDemo creates the demo cluster in a file:// store and applies it: its keystore exists.
func appliedDemo(t *testing.T) *Clusters {
	t.Helper()
	ctx := context.Background()
	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := cs.Update(ctx, demo, UpdateOptions{Out: &out, Apply: true, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, out.String())
	}
	return cs
}

// storedCA is the cluster's Kubernetes CA as the store holds it.
func storedCA(t *testing.T, cs *Clusters) *pkitasks.Issued {
	t.Helper()
	obj, err := cs.Store.ReadFile(context.Background(), model.KeypairPath(demo, model.KeypairKubernetesCA))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pkitasks.Decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// testKubeconfig is the part of a kubeconfig the tests read.
type testKubeconfig struct {
	APIVersion     string `json:"apiVersion"`
	Kind           string `json:"kind"`
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server string `json:"server"`
			CAData []byte `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			CertData []byte `json:"client-certificate-data"`
			KeyData  []byte `json:"client-key-data"`
			Token    string `json:"token"`
		} `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
}

func readKubeconfig(t *testing.T, path string) (*testKubeconfig, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kc testKubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	return &kc, raw
}

// names lists the names of a kubeconfig's entries of one list.
func names(raw map[string]any, list string) []string {
	var out []string
	for _, e := range raw[list].([]any) {
		out = append(out, e.(map[string]any)["name"].(string))
	}
	return out
}

const otherKubeconfig = `# someone else's clusters
apiVersion: v1
kind: Config
preferences:
  colors: true
x-unknown-top-level:
  kept: [1, 2, 12345678901234567890]
clusters:
- name: other
  cluster:
    server: https://other.example.org:6443
    insecure-skip-tls-verify: true
    extensions:
    - name: x
      extension: {anything: goes}
- name: demo.example.com
  cluster:
    server: https://stale.example.com
users:
- name: other-user
  user:
    token: abc
- name: demo.example.com-admin
  user:
    token: stale
- name: demo.example.com-admin
  user:
    token: stale-twice
contexts:
- name: other
  context: {cluster: other, user: other-user, namespace: dev}
- name: demo.example.com
  context: {cluster: stale, user: stale}
current-context: other
`

// TestExportKubeconfig exports the applied demo cluster's kubeconfig into a file that holds other clusters:
// they are kept, the cluster's stale entries replaced, and the admin certificate is one the store's CA signed.
func TestExportKubeconfig(t *testing.T) {
	ctx := context.Background()
	cs := appliedDemo(t)
	ca := storedCA(t, cs)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(otherKubeconfig), 0o644); err != nil {
		t.Fatal(err)
	}

	before := time.Now()
	e, err := cs.ExportKubeconfig(ctx, demo, ExportOptions{Path: path, AdminLifetime: 2 * time.Hour})
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	want := &Exported{Path: path, Context: demo, Cluster: demo, User: demo + "-admin", Server: "https://api." + demo, NotAfter: e.NotAfter}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("ExportKubeconfig (-want +got):\n%s", diff)
	}
	if lo, hi := before.Add(2*time.Hour).Truncate(time.Second), after.Add(2*time.Hour); e.NotAfter.Before(lo) || e.NotAfter.After(hi) {
		t.Errorf("the certificate ends %s, want between %s and %s", e.NotAfter, lo, hi)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the kubeconfig's mode: %v %v, want 0600", fi.Mode(), err)
	}

	kc, raw := readKubeconfig(t, path)
	checkExported(t, kc, ca, e)
	for _, list := range []struct {
		name string
		want []string
	}{
		{"clusters", []string{"other", demo}},
		{"users", []string{"other-user", demo + "-admin"}},
		{"contexts", []string{"other", demo}},
	} {
		if diff := cmp.Diff(list.want, names(raw, list.name)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", list.name, diff)
		}
	}
	var original map[string]any
	if err := yaml.Unmarshal([]byte(otherKubeconfig), &original); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"preferences", "x-unknown-top-level", "apiVersion", "kind"} {
		if diff := cmp.Diff(original[field], raw[field]); diff != "" {
			t.Errorf("%s changed (-before +after):\n%s", field, diff)
		}
	}
	for _, list := range []string{"clusters", "users", "contexts"} {
		if diff := cmp.Diff(original[list].([]any)[0], raw[list].([]any)[0]); diff != "" {
			t.Errorf("the other %s entry changed (-before +after):\n%s", list, diff)
		}
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "12345678901234567890") {
		t.Errorf("a large number of an unknown field was not kept as it was:\n%s", data)
	}

	// A second export replaces the entries: no name twice, a new certificate.
	e2, err := cs.ExportKubeconfig(ctx, demo, ExportOptions{Path: path, AdminLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	kc2, raw2 := readKubeconfig(t, path)
	checkExported(t, kc2, ca, e2)
	for _, list := range []string{"clusters", "users", "contexts"} {
		if diff := cmp.Diff(names(raw, list), names(raw2, list)); diff != "" {
			t.Errorf("%s after a second export (-first +second):\n%s", list, diff)
		}
	}
	if slices.Equal(userCert(t, kc, demo+"-admin").Raw, userCert(t, kc2, demo+"-admin").Raw) {
		t.Error("the second export kept the first certificate")
	}
	if left := dirEntries(t, filepath.Dir(path)); !slices.Equal(left, []string{"kubeconfig"}) {
		t.Errorf("left in the kubeconfig's directory: %v", left)
	}
}

// checkExported checks the cluster's entries of kc: the server, the CA, and an admin certificate that the
// CA signed, with its key, for CN kubeup-admin O system:masters, ending when e says.
func checkExported(t *testing.T, kc *testKubeconfig, ca *pkitasks.Issued, e *Exported) {
	t.Helper()
	if kc.CurrentContext != demo || kc.APIVersion != "v1" || kc.Kind != "Config" {
		t.Errorf("current-context %q apiVersion %q kind %q, want %s v1 Config", kc.CurrentContext, kc.APIVersion, kc.Kind, demo)
	}
	for _, c := range kc.Contexts {
		if c.Name == demo && (c.Context.Cluster != demo || c.Context.User != demo+"-admin") {
			t.Errorf("context %s: %+v", demo, c.Context)
		}
	}
	for _, c := range kc.Clusters {
		if c.Name != demo {
			continue
		}
		if c.Cluster.Server != "https://api."+demo {
			t.Errorf("server %q", c.Cluster.Server)
		}
		if string(c.Cluster.CAData) != ca.CertPEM {
			t.Error("certificate-authority-data is not the store's Kubernetes CA")
		}
	}
	cert := userCert(t, kc, demo+"-admin")
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the admin certificate does not verify against the store's CA: %v", err)
	}
	if cert.Subject.CommonName != model.AdminUser || !slices.Equal(cert.Subject.Organization, []string{model.AdminGroup}) {
		t.Errorf("subject %s, want CN=%s O=%s", cert.Subject, model.AdminUser, model.AdminGroup)
	}
	if !cert.NotAfter.Equal(e.NotAfter) {
		t.Errorf("the certificate ends %s, Exported says %s", cert.NotAfter, e.NotAfter)
	}
}

func userCert(t *testing.T, kc *testKubeconfig, user string) *x509.Certificate {
	t.Helper()
	for _, u := range kc.Users {
		if u.Name != user {
			continue
		}
		pair, err := tls.X509KeyPair(u.User.CertData, u.User.KeyData)
		if err != nil {
			t.Fatalf("user %s: the certificate and key are not a pair: %v", user, err)
		}
		cert, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	t.Fatalf("no user %s", user)
	return nil
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestKubeconfigPath: the first path of $KUBECONFIG, else ~/.kube/config; an export to it makes the directory,
// private.
func TestKubeconfigPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	a, b := filepath.Join(home, "a", "config"), filepath.Join(home, "b", "config")
	for _, tt := range []struct{ env, want string }{
		{"", filepath.Join(home, ".kube", "config")},
		{a, a},
		{a + string(filepath.ListSeparator) + b, a},
		{string(filepath.ListSeparator) + string(filepath.ListSeparator) + b, b},
	} {
		t.Setenv(EnvKubeconfig, tt.env)
		if got, err := KubeconfigPath(); err != nil || got != tt.want {
			t.Errorf("$KUBECONFIG=%q: %q %v, want %q", tt.env, got, err, tt.want)
		}
	}

	cs := appliedDemo(t)
	t.Setenv(EnvKubeconfig, a+string(filepath.ListSeparator)+b)
	e, err := cs.ExportKubeconfig(context.Background(), demo, ExportOptions{AdminLifetime: DefaultAdminLifetime})
	if err != nil {
		t.Fatal(err)
	}
	if e.Path != a {
		t.Errorf("wrote %s, want %s", e.Path, a)
	}
	kc, _ := readKubeconfig(t, a)
	checkExported(t, kc, storedCA(t, cs), e)
	if fi, err := os.Stat(filepath.Dir(a)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the kubeconfig's new directory: %v %v, want mode 0700", fi.Mode(), err)
	}
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the second file of $KUBECONFIG: %v, want it not written", err)
	}
}

// TestExportKubeconfigSymlink: a kubeconfig that is a symbolic link stays one; the file it names is replaced.
func TestExportKubeconfigSymlink(t *testing.T) {
	cs := appliedDemo(t)
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real", "config"), filepath.Join(dir, "config")
	if err := os.MkdirAll(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(otherKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("real", "config"), link); err != nil {
		t.Fatal(err)
	}
	e, err := cs.ExportKubeconfig(context.Background(), demo, ExportOptions{Path: link, AdminLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symbolic link: %v %v", link, fi.Mode(), err)
	}
	kc, raw := readKubeconfig(t, real)
	checkExported(t, kc, storedCA(t, cs), e)
	if diff := cmp.Diff([]string{"other", demo}, names(raw, "clusters")); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if left := dirEntries(t, dir); !slices.Equal(left, []string{"config", "real"}) {
		t.Errorf("left in the link's directory: %v", left)
	}
}

// TestExportKubeconfigRefuses: a file that is not a kubeconfig, or is being written by kubectl, is left as it
// is, and so is its directory.
func TestExportKubeconfigRefuses(t *testing.T) {
	ctx := context.Background()
	cs := appliedDemo(t)
	for _, tt := range []struct {
		name, contents, want string
		locked               bool
	}{
		{name: "not YAML", contents: "clusters: [\n  - name: a\n  bad", want: "yaml"},
		{name: "a list", contents: "- a\n- b\n", want: "its top level is not a mapping"},
		{name: "clusters not a list", contents: "clusters: {a: b}\n", want: "clusters is not a list"},
		{name: "an entry not a mapping", contents: "users:\n- just-a-name\n", want: "users[0] is not a mapping"},
		{name: "another kind", contents: "apiVersion: v1\nkind: Pod\n", want: `kind is "Pod", want Config`},
		{name: "two documents", contents: "kind: Config\n---\nkind: Config\n", want: "more than one YAML document"},
		{name: "current-context a list", contents: "current-context: [a]\n", want: "current-context is not a string"},
		{name: "locked by kubectl", contents: otherKubeconfig, want: "its lock file", locked: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config")
			if err := os.WriteFile(path, []byte(tt.contents), 0o644); err != nil {
				t.Fatal(err)
			}
			wantLeft := []string{"config"}
			if tt.locked {
				if err := os.WriteFile(path+".lock", nil, 0o600); err != nil {
					t.Fatal(err)
				}
				wantLeft = append(wantLeft, "config.lock")
			}
			_, err := cs.ExportKubeconfig(ctx, demo, ExportOptions{Path: path, AdminLifetime: time.Hour})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("export into %s: %v, want an error naming the file and %q", tt.name, err, tt.want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("the error holds a key: %v", err)
			}
			if data, _ := os.ReadFile(path); string(data) != tt.contents {
				t.Errorf("the file was changed:\n%s", data)
			}
			if left := dirEntries(t, dir); !slices.Equal(left, wantLeft) {
				t.Errorf("left in the directory: %v, want %v", left, wantLeft)
			}
		})
	}
}

// TestExportKubeconfigPreconditions: the lifetime's bounds, a missing cluster, a cluster not yet applied, a CA
// that ends before the certificate would.
func TestExportKubeconfigPreconditions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "config")

	cs := openStore(t, "file://"+t.TempDir())
	c, igs := newDemo(t, 1)
	if err := cs.Create(ctx, "create", c, igs); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, -time.Hour, MaxAdminLifetime + time.Second} {
		if _, err := cs.ExportKubeconfig(ctx, demo, ExportOptions{Path: path, AdminLifetime: d}); err == nil || !strings.Contains(err.Error(), "--admin") {
			t.Errorf("a lifetime of %s: %v, want refused", d, err)
		}
	}
	_, err := cs.ExportKubeconfig(ctx, "absent.example.com", ExportOptions{Path: path, AdminLifetime: time.Hour})
	var notFound *NotFoundError
	if !errors.As(err, &notFound) {
		t.Errorf("a missing cluster: %v, want a NotFoundError", err)
	}
	_, err = cs.ExportKubeconfig(ctx, demo, ExportOptions{Path: path, AdminLifetime: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "has not been applied") || !strings.Contains(err.Error(), "run `kubeup update cluster "+demo+" --yes` first") {
		t.Errorf("an unapplied cluster: %v, want the update to run first", err)
	}

	// A CA that ends in two hours signs no certificate for three.
	ca, err := pkitasks.Issue(pkitasks.Request{CommonName: model.KeypairKubernetesCA, Usage: pkitasks.UsageCA, Lifetime: 2 * time.Hour}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Store.WriteFile(ctx, model.KeypairPath(demo, model.KeypairKubernetesCA), []byte(ca.Encode().Reveal())); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ExportKubeconfig(ctx, demo, ExportOptions{Path: path, AdminLifetime: 3 * time.Hour}); err == nil || !strings.Contains(err.Error(), "after the cluster's Kubernetes CA") {
		t.Errorf("a certificate beyond its CA: %v, want refused", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused export wrote the kubeconfig: %v", err)
	}
	e, err := cs.ExportKubeconfig(ctx, demo, ExportOptions{Path: path, AdminLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	kc, _ := readKubeconfig(t, path)
	checkExported(t, kc, ca, e)

	// A CA object that is not a CA.
	leaf, err := pkitasks.Issue(pkitasks.Request{CommonName: "x", Usage: pkitasks.UsageClient, Lifetime: time.Hour}, ca, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Store.WriteFile(ctx, model.KeypairPath(demo, model.KeypairKubernetesCA), []byte(leaf.Encode().Reveal())); err != nil {
		t.Fatal(err)
	}
	_, err = cs.ExportKubeconfig(ctx, demo, ExportOptions{Path: path, AdminLifetime: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "holds no CA certificate") || strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("a CA object holding a leaf: %v", err)
	}
}

func TestAPIServerURL(t *testing.T) {
	for _, tt := range []struct {
		port *int32
		want string
	}{
		{nil, "https://api." + demo},
		{ptr[int32](443), "https://api." + demo},
		{ptr[int32](6443), "https://api." + demo + ":6443"},
	} {
		c, igs := newDemo(t, 1)
		c.Spec.KubeAPIServer = &model.KubeAPIServerConfig{SecurePort: tt.port}
		full, _ := model.Complete(c, igs)
		if got := apiServerURL(full); got != tt.want {
			t.Errorf("securePort %v: %s, want %s", tt.port, got, tt.want)
		}
	}
}
