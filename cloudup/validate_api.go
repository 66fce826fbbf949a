package cloudup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

// apiClient talks to a cluster's API with the credentials of a kubeconfig: net/http and the kubeconfig's TLS
// material, for the few reads validation makes (client-go would bring a large tree of modules for two GETs).
//
// The API's name resolves to every control-plane node (there is no load balancer in front of them): a request
// goes to each address in turn until one answers, so that one node whose kube-apiserver hangs (its etcd member
// down) does not hide the others.
type apiClient struct {
	server   string // the kubeconfig's: https://host[:port]
	host     string
	port     string
	http     *http.Client
	resolver hostResolver
}

// hostResolver resolves names: *net.Resolver, or a test's.
type hostResolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// kubeCredentials are what a kubeconfig's context gives to reach a cluster's API: its server, the CA it trusts,
// and the client certificate and key (in PEM), which load as pair.
type kubeCredentials struct {
	server                 *url.URL
	caPEM, certPEM, keyPEM []byte
	pool                   *x509.CertPool
	pair                   tls.Certificate
}

// readKubeconfigCredentials reads the kubeconfig file path ("" is KubeconfigPath()'s) and returns the credentials of its
// context named after the cluster, as `kubeup export kubeconfig` writes it: only the embedded *-data fields, an
// https:// server, and an admin certificate that has not ended. Each error names the file, the context and the fix.
func readKubeconfigCredentials(path, cluster string) (*kubeCredentials, error) {
	if path == "" {
		var err error
		if path, err = KubeconfigPath(); err != nil {
			return nil, err
		}
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("kubeconfig %s does not exist: run `kubeup export kubeconfig %s` first (%w)", path, cluster, err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	cfg, err := parseKubeconfig(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	fix := fmt.Sprintf("run `kubeup export kubeconfig %s` (it writes a context named after the cluster)", cluster)
	ctxEntry := namedEntry(cfg, "contexts", cluster)
	if ctxEntry == nil {
		return nil, fmt.Errorf("kubeconfig %s has no context %s: %s", path, cluster, fix)
	}
	inner, _ := ctxEntry["context"].(map[string]any)
	clusterName, _ := inner["cluster"].(string)
	userName, _ := inner["user"].(string)
	cl, _ := namedEntry(cfg, "clusters", clusterName)["cluster"].(map[string]any)
	user, _ := namedEntry(cfg, "users", userName)["user"].(map[string]any)
	server, _ := cl["server"].(string)
	if server == "" {
		return nil, fmt.Errorf("kubeconfig %s: context %s names no cluster entry with a server: %s", path, cluster, fix)
	}
	pemField := func(m map[string]any, field string) ([]byte, error) {
		s, _ := m[field].(string)
		if s == "" {
			return nil, fmt.Errorf("kubeconfig %s: context %s: %s is missing (kubeup reads only the embedded *-data fields): %s", path, cluster, field, fix)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: context %s: %s is not base64: %s", path, cluster, field, fix)
		}
		return b, nil
	}
	caPEM, err := pemField(cl, "certificate-authority-data")
	if err != nil {
		return nil, err
	}
	certPEM, err := pemField(user, "client-certificate-data")
	if err != nil {
		return nil, err
	}
	keyPEM, err := pemField(user, "client-key-data")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("kubeconfig %s: context %s: certificate-authority-data holds no certificate: %s", path, cluster, fix)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: context %s: the client certificate and key do not load (%v): %s", path, cluster, err, fix)
	}
	if pair.Leaf != nil && time.Now().After(pair.Leaf.NotAfter) {
		return nil, fmt.Errorf("kubeconfig %s: context %s: the admin certificate ended at %s: %s", path, cluster,
			pair.Leaf.NotAfter.UTC().Format(time.RFC3339), fix)
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("kubeconfig %s: context %s: server %q is not an https:// URL: %s", path, cluster, server, fix)
	}
	return &kubeCredentials{server: u, caPEM: caPEM, certPEM: certPEM, keyPEM: keyPEM, pool: pool, pair: pair}, nil
}

// newAPIClient reads the kubeconfig file path ("" is KubeconfigPath()'s) and returns a client of its context
// named after the cluster (readKubeconfigCredentials).
func newAPIClient(path, cluster string) (*apiClient, error) {
	cr, err := readKubeconfigCredentials(path, cluster)
	if err != nil {
		return nil, err
	}
	u := cr.server
	port := u.Port()
	if port == "" {
		port = "443"
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cr.pool, Certificates: []tls.Certificate{cr.pair}, MinVersion: tls.VersionTLS12,
		ServerName: u.Hostname()}}
	return &apiClient{server: strings.TrimRight(u.String(), "/"), host: u.Hostname(), port: port,
		http: &http.Client{Transport: tr, Timeout: 10 * time.Second}, resolver: net.DefaultResolver}, nil
}

// namedEntry is the entry of a kubeconfig list whose name is name, or nil.
func namedEntry(cfg map[string]any, list, name string) map[string]any {
	entries, _ := cfg[list].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

// get reads path of the API as JSON into v, from the first of the API's addresses that answers.
func (c *apiClient) get(ctx context.Context, path string, v any) error {
	addrs := []string{c.host}
	if net.ParseIP(c.host) == nil {
		var err error
		if addrs, err = c.resolver.LookupHost(ctx, c.host); err != nil {
			return fmt.Errorf("reading %s from the API: %w", path, err)
		}
	}
	var errs []error
	for _, a := range addrs {
		err := c.getFrom(ctx, a, path, v)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *apiClient) getFrom(ctx context.Context, addr, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(addr, c.port)+path, nil)
	if err != nil {
		return err
	}
	req.Host = net.JoinHostPort(c.host, c.port)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reading %s from the API at %s (%s): %w", path, c.host, addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading %s from the API at %s (%s): %w", path, c.host, addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading %s from the API at %s (%s): %s: %s", path, c.host, addr, resp.Status, strings.TrimSpace(string(body[:min(len(body), 300)])))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("reading %s from the API at %s (%s): %w", path, c.host, addr, err)
	}
	return nil
}

// The parts of core/v1 Node and Pod validation reads.
type (
	apiNode struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Status struct {
			Conditions []apiCondition `json:"conditions"`
			Addresses  []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
		} `json:"status"`
	}
	apiPod struct {
		Metadata struct {
			Name              string            `json:"name"`
			Annotations       map[string]string `json:"annotations"`
			DeletionTimestamp *string           `json:"deletionTimestamp"`
		} `json:"metadata"`
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
		Status struct {
			Phase      string         `json:"phase"`
			Conditions []apiCondition `json:"conditions"`
		} `json:"status"`
	}
	apiCondition struct {
		Type    string `json:"type"`
		Status  string `json:"status"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
)

// condition returns the condition of type typ, or nil.
func condition(cs []apiCondition, typ string) *apiCondition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

func (c *apiClient) nodes(ctx context.Context) ([]apiNode, error) {
	var l struct {
		Items []apiNode `json:"items"`
	}
	err := c.get(ctx, "/api/v1/nodes", &l)
	return l.Items, err
}

func (c *apiClient) kubeSystemPods(ctx context.Context) ([]apiPod, error) {
	var l struct {
		Items []apiPod `json:"items"`
	}
	err := c.get(ctx, "/api/v1/namespaces/kube-system/pods", &l)
	return l.Items, err
}

// etcdClient returns an HTTP client for the etcd members' client port: kube-apiserver's etcd client
// certificate (kube-apiserver-etcd-client), and trust in the etcd clients CA, both read from the keystore. It
// resolves the members' names with dns.
func (cs *Clusters) etcdClient(ctx context.Context, cluster string, dns hostResolver) (*http.Client, error) {
	read := func(name string) (*pkitasks.Issued, error) {
		p := model.KeypairPath(cluster, name)
		obj, err := cs.Store.ReadFile(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cluster %s has not been applied yet: %s is not in the state store (%w); run `kubeup update cluster %s --yes` first",
				cluster, cs.location(p), err, cluster)
		}
		if err != nil {
			return nil, err
		}
		is, err := pkitasks.Decode(obj)
		if err == nil && is.Cert == nil {
			err = errors.New("it holds no certificate")
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: keypair %s cannot be used: %w", cluster, cs.location(p), err)
		}
		return is, nil
	}
	ca, err := read(model.KeypairEtcdClientsCA)
	if err != nil {
		return nil, err
	}
	client, err := read(model.KeypairEtcdAPIClient)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair([]byte(client.CertPEM), []byte(client.KeyPEM.Reveal()))
	if err != nil {
		return nil, fmt.Errorf("cluster %s: keypair %s does not load: %w", cluster, model.KeypairEtcdAPIClient, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		DialContext: dialVia(dns)}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, nil
}

// dialVia dials host:port at the addresses dns resolves host to, in turn.
func dialVia(dns hostResolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		addrs := []string{host}
		if net.ParseIP(host) == nil {
			if addrs, err = dns.LookupHost(ctx, host); err != nil {
				return nil, err
			}
		}
		var errs []error
		for _, a := range addrs {
			conn, err := d.DialContext(ctx, network, net.JoinHostPort(a, port))
			if err == nil {
				return conn, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}
