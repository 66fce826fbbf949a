package cloudup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

// Lifetimes of an exported admin certificate.
const (
	// DefaultAdminLifetime is a working day and a night: export again tomorrow.
	DefaultAdminLifetime = 18 * time.Hour
	// MaxAdminLifetime is the longest an exported admin certificate may live. It cannot be revoked (Kubernetes
	// checks no revocation list for client certificates; only replacing the Kubernetes CA ends it), so one that
	// leaks, or that outlives its holder's access to the state store, stays cluster-admin until it ends. Anyone
	// who can read the store can export a new one at any time, so a long one buys little.
	MaxAdminLifetime = 30 * 24 * time.Hour
)

// EnvKubeconfig is the variable kubectl reads its kubeconfig files from: a list of paths (colon-separated on
// Unix).
const EnvKubeconfig = "KUBECONFIG"

// ExportOptions say what ExportKubeconfig issues and where it writes.
type ExportOptions struct {
	// Path is the kubeconfig file to merge into; "" is KubeconfigPath()'s.
	Path string
	// AdminLifetime is how long the admin certificate is valid from now: more than 0, at most
	// MaxAdminLifetime, and not beyond the Kubernetes CA's own end.
	AdminLifetime time.Duration
}

// Exported says what ExportKubeconfig wrote. It holds no key.
type Exported struct {
	// Path is the kubeconfig file written.
	Path string
	// Context, Cluster and User are the names of the entries written; Context is the current context now.
	Context, Cluster, User string
	// Server is the API's URL.
	Server string
	// NotAfter is when the admin certificate ends.
	NotAfter time.Time
}

// AdminUserEntry is the name of a cluster's user entry in a kubeconfig: <cluster>-admin. The cluster and
// context entries are named after the cluster.
func AdminUserEntry(cluster string) string { return cluster + "-admin" }

// ExportKubeconfig issues a new admin client certificate for a cluster (CN model.AdminUser, O model.AdminGroup),
// signed by the cluster's Kubernetes CA from the state store, and merges a kubeconfig for it into the file
// o.Path: a cluster and a context named after the cluster and a user AdminUserEntry(cluster) replace the entries
// of those names, every other entry and field is kept, and the context becomes the current one. The file is
// written atomically, mode 0600; one that does not parse is left as it is, and nothing is written.
//
// The certificate is not stored anywhere else. The cluster must have been applied (`kubeup update cluster
// --yes`): before that there is no CA.
func (cs *Clusters) ExportKubeconfig(ctx context.Context, name string, o ExportOptions) (*Exported, error) {
	if err := checkAdminLifetime(o.AdminLifetime); err != nil {
		return nil, err
	}
	file := o.Path
	if file == "" {
		var err error
		if file, err = KubeconfigPath(); err != nil {
			return nil, err
		}
	}
	stored, err := cs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	c, _, err := cs.Complete(stored)
	if err != nil {
		return nil, err
	}
	ca, err := cs.kubernetesCA(ctx, name)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if now.After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("cluster %s: its Kubernetes CA ended at %s: it signs nothing the API would accept; replace it (docs/pki.md)",
			name, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if end := now.Add(o.AdminLifetime); end.After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("cluster %s: an admin certificate valid for %s would end at %s, after the cluster's Kubernetes CA (%s): ask for a shorter one, or replace the CA (docs/pki.md)",
			name, o.AdminLifetime, end.UTC().Format(time.RFC3339), ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	admin, err := pkitasks.Issue(pkitasks.Request{
		CommonName:   model.AdminUser,
		Organization: []string{model.AdminGroup},
		Usage:        pkitasks.UsageClient,
		Lifetime:     o.AdminLifetime,
	}, ca, now)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: issuing an admin certificate: %w", name, err)
	}
	e := &Exported{
		Path: file, Context: name, Cluster: name, User: AdminUserEntry(name),
		Server: apiServerURL(c), NotAfter: admin.Cert.NotAfter,
	}
	fresh := model.Kubeconfig(name, e.Server, ca.CertPEM, e.User, admin.CertPEM, admin.KeyPEM)
	if err := mergeKubeconfigFile(file, fresh); err != nil {
		return nil, err
	}
	return e, nil
}

func checkAdminLifetime(d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("the admin certificate's lifetime (--admin) is %s: want a duration above 0, such as %s", d, DefaultAdminLifetime)
	case d > MaxAdminLifetime:
		return fmt.Errorf("the admin certificate's lifetime (--admin) is %s: at most %s (30 days), since it cannot be revoked: export again when it ends", d, MaxAdminLifetime)
	}
	return nil
}

// kubernetesCA reads the cluster's Kubernetes CA, certificate and key, from the state store.
func (cs *Clusters) kubernetesCA(ctx context.Context, name string) (*pkitasks.Issued, error) {
	p := model.KeypairPath(name, model.KeypairKubernetesCA)
	obj, err := cs.Store.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cluster %s has not been applied yet: its Kubernetes CA is not in the state store (%w); run `kubeup update cluster %s --yes` first",
			name, err, name)
	}
	if err != nil {
		return nil, err
	}
	ca, err := pkitasks.Decode(obj) // its errors never quote the object
	if err == nil && (ca.Cert == nil || !ca.Cert.IsCA) {
		err = errors.New("it holds no CA certificate")
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %s: the Kubernetes CA %s cannot be used: %w", name, cs.location(p), err)
	}
	return ca, nil
}

// apiServerURL is the URL users reach the API at: https://<spec.api.publicName>, with the port unless it is 443.
func apiServerURL(c *model.Cluster) string {
	host := c.Spec.API.PublicName
	if a := c.Spec.KubeAPIServer; a != nil && a.SecurePort != nil && *a.SecurePort != 443 {
		host = net.JoinHostPort(host, strconv.Itoa(int(*a.SecurePort)))
	}
	return "https://" + host
}

// KubeconfigPath is the kubeconfig file kubectl reads first: the first path of $KUBECONFIG, else
// ~/.kube/config. Entries of the first file win over those of later ones when kubectl merges them, and so does
// its current-context.
func KubeconfigPath() (string, error) {
	for _, p := range filepath.SplitList(os.Getenv(EnvKubeconfig)) {
		if p != "" {
			return p, nil
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the kubeconfig file: $%s is not set and %w", EnvKubeconfig, err)
	}
	return filepath.Join(home, ".kube", "config"), nil
}

// mergeKubeconfigFile merges the kubeconfig fresh into the file name (created, with its directory, when
// missing), under kubectl's lock file <name>.lock.
func mergeKubeconfigFile(name string, fresh engine.Secret) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return fmt.Errorf("making the directory of kubeconfig %s: %w", name, err)
	}
	unlock, err := lockKubeconfig(name)
	if err != nil {
		return err
	}
	defer unlock()
	target := name // a symbolic link is followed: the file it names is replaced, the link kept
	if resolved, err := filepath.EvalSymlinks(name); err == nil {
		target = resolved
	}
	data, err := os.ReadFile(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading kubeconfig %s: %w", name, err)
	}
	cfg, err := parseKubeconfig(data)
	if err != nil {
		return fmt.Errorf("%s is not a kubeconfig kubeup can merge into (%w): nothing was written; fix it, or name another file with $%s or --kubeconfig",
			name, err, EnvKubeconfig)
	}
	entries, err := parseKubeconfig([]byte(fresh.Reveal()))
	if err != nil {
		return fmt.Errorf("the new kubeconfig does not parse: %w", err) // model.Kubeconfig made it: unreachable
	}
	mergeKubeconfig(cfg, entries)
	out, err := encodeKubeconfig(cfg)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig %s: %w", name, err)
	}
	if err := atomicfile.Write(target, out, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", name, err)
	}
	return nil
}

// lockKubeconfig takes the lock kubectl (client-go) takes before it writes a kubeconfig: the file <name>.lock,
// created exclusively and removed by unlock. Two writers at once would otherwise lose one's entries.
func lockKubeconfig(name string) (unlock func(), err error) {
	lock := name + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("kubeconfig %s is being written by another program (kubectl or kubeup): its lock file %s exists; if no such program runs, remove the lock file and try again",
			name, lock)
	}
	if err != nil {
		return nil, fmt.Errorf("locking kubeconfig %s: %w", name, err)
	}
	f.Close()
	return func() { os.Remove(lock) }, nil
}

// The lists of a kubeconfig whose entries are named.
var kubeconfigLists = []string{"clusters", "users", "contexts"}

// parseKubeconfig reads a kubeconfig as untyped data, so that fields kubeup does not know are kept as they are.
// Empty data is an empty kubeconfig. It checks the shape of what a merge changes: the named lists and
// current-context. Errors never quote the data.
func parseKubeconfig(data []byte) (map[string]any, error) {
	cfg := map[string]any{}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := singleDocument(data); err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.UseNumber() // numbers of unknown fields are written back as they were read
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case nil: // only comments
		case map[string]any:
			cfg = v
		default:
			return nil, errors.New("its top level is not a mapping")
		}
	}
	for _, f := range [][2]string{{"apiVersion", "v1"}, {"kind", "Config"}} {
		field, want := f[0], f[1]
		switch v, ok := cfg[field]; {
		case !ok || v == want:
		case isString(v):
			return nil, fmt.Errorf("%s is %q, want %s", field, v, want)
		default:
			return nil, fmt.Errorf("%s is not a string, want %s", field, want)
		}
	}
	for _, list := range kubeconfigLists {
		switch v := cfg[list].(type) {
		case nil:
		case []any:
			for i, e := range v {
				if _, ok := e.(map[string]any); !ok {
					return nil, fmt.Errorf("%s[%d] is not a mapping", list, i)
				}
			}
		default:
			return nil, fmt.Errorf("%s is not a list", list)
		}
	}
	if v, ok := cfg["current-context"]; ok && v != nil && !isString(v) {
		return nil, errors.New("current-context is not a string")
	}
	return cfg, nil
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// singleDocument refuses YAML with more than one document: kubectl reads only the first, and a rewrite would
// lose the others.
func singleDocument(data []byte) error {
	content := false
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(nil, len(data)+1)
	for s.Scan() {
		line := s.Text()
		switch {
		case line == "---" || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "---\t"):
			if content {
				return errors.New("it holds more than one YAML document")
			}
		case strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#"):
			content = true
		}
	}
	return s.Err()
}

// mergeKubeconfig merges the entries of fresh into cfg: each named entry of fresh replaces the entries of cfg
// of the same name in the same list (in the place of the first, so that no name is left twice), or is added
// at the end; fresh's current-context becomes cfg's. Everything else of cfg is kept.
func mergeKubeconfig(cfg, fresh map[string]any) {
	for _, list := range kubeconfigLists {
		entries, _ := cfg[list].([]any)
		add, _ := fresh[list].([]any)
		for _, e := range add {
			entries = replaceNamed(entries, e.(map[string]any))
		}
		cfg[list] = entries
	}
	if v, ok := fresh["current-context"]; ok {
		cfg["current-context"] = v
	}
	if _, ok := cfg["apiVersion"]; !ok {
		cfg["apiVersion"] = "v1"
	}
	if _, ok := cfg["kind"]; !ok {
		cfg["kind"] = "Config"
	}
}

func replaceNamed(list []any, e map[string]any) []any {
	out := make([]any, 0, len(list)+1)
	replaced := false
	for _, x := range list {
		if m, ok := x.(map[string]any); ok && m["name"] == e["name"] {
			if !replaced {
				out = append(out, e)
				replaced = true
			}
			continue
		}
		out = append(out, x)
	}
	if !replaced {
		out = append(out, e)
	}
	return out
}

// encodeKubeconfig writes a kubeconfig as YAML, keys sorted, as kubectl writes one (comments are not kept,
// by kubectl either).
func encodeKubeconfig(cfg map[string]any) ([]byte, error) {
	j, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}
