package staticpods

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// KubeletAPIConfig is what a KubeletAPI reports, and where.
type KubeletAPIConfig struct {
	// NodeName is the Node's name, unless kubelet's flags say --hostname-override.
	NodeName string
	// Address is the node's InternalIP.
	Address string
	// Root is the node's filesystem: kubelet's flags are read from Root/etc/default/kubelet (DAEMON_ARGS, as
	// nodeup writes them) at each round: --node-labels (such as kubeup.dev/instancegroup, which validate counts
	// nodes by), --register-with-taints, --max-pods (the Node's pod capacity) and --hostname-override.
	Root string
	// Kubeconfig is the file of `kubeup export kubeconfig`: its current context's server, CA and client
	// certificate (embedded, as kubeup writes them) are what the stand-in calls the API with. These are the
	// cluster admin's credentials, not a kubelet's: kubelet client certificates are not issued yet (docs/pki.md).
	Kubeconfig string
	// ServerAddresses, when set, are the hosts (or host:port) connected to instead of the kubeconfig server's
	// name, which stays the TLS server name: the stand-in runs on the host, which does not resolve the cluster's
	// names. The first is used until a round fails, then the next, in turn. A control-plane node's own address
	// first is what its kubelet would reach (its local kube-apiserver); the others keep the node reported while
	// its kube-apiserver cannot answer (it reads the node's own etcd member, which may be the one stopped).
	ServerAddresses []string
	// Pods are the static pods the node runs (Runner.Pods): each gets a mirror pod.
	Pods func() []Pod
	// Interval between rounds; 0 is 2s.
	Interval time.Duration
	// Log gets a line when a round's outcome changes (nil: discarded).
	Log *slog.Logger
}

// KubeletAPI is a stand-in for the half of kubelet that talks to the API, for the demo and the e2e tests, not
// product code. No real kubelet runs there (Runner plays its pod half), so nothing would register the Node or post
// the mirror pods that `kubeup validate cluster` checks. Every Interval it:
//
//   - registers the Node (POST, once it is not there) with the labels and taints of the node's kubelet flags;
//   - renews the Node's status: Ready (reason KubeletReady, the heartbeat now), its InternalIP and Hostname
//     addresses, its pod capacity (--max-pods);
//   - posts a mirror pod <manifest's name>-<node> in kube-system for each static pod the Runner runs (the
//     manifest's file name without .manifest, as nodeup names them), Running and Ready while its process runs,
//     Pending while it does not;
//   - deletes the mirror pods of this node (kubernetes.io/config.mirror) whose manifest is gone.
//
// It calls the API with the cluster admin's certificate of the kubeconfig (see KubeletAPIConfig.Kubeconfig).
// Validation's checks of etcd (each member's /health) and of DNS do not go through it.
type KubeletAPI struct {
	c       KubeletAPIConfig
	servers []string // https://host:port
	http    *http.Client

	mu      sync.Mutex
	mirrors map[string]bool // this node's mirror pods, as the last round left them
	lastErr string
	server  int // the index in servers of the one in use

	cancel context.CancelFunc
	done   chan struct{}
}

// StartKubeletAPI reads the kubeconfig and starts the rounds; Stop stops them. The API need not answer yet: a
// round that fails is logged and the next one tries again.
func StartKubeletAPI(c KubeletAPIConfig) (*KubeletAPI, error) {
	k, err := newKubeletAPI(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go k.run(ctx)
	return k, nil
}

// newKubeletAPI is a KubeletAPI whose rounds have not started.
func newKubeletAPI(c KubeletAPIConfig) (*KubeletAPI, error) {
	if c.NodeName == "" || c.Address == "" || c.Root == "" || c.Pods == nil {
		return nil, errors.New("kubelet API stand-in: NodeName, Address, Root and Pods are required")
	}
	if c.Interval == 0 {
		c.Interval = 2 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	server, tlsConf, err := readKubeconfig(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("%s: the server %q is not an https:// URL: export it again with kubeup export kubeconfig", c.Kubeconfig, server)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	servers := []string{"https://" + net.JoinHostPort(u.Hostname(), port)}
	if len(c.ServerAddresses) > 0 {
		servers = nil
	}
	for _, a := range c.ServerAddresses {
		host, p := a, port
		if h, hp, err := net.SplitHostPort(a); err == nil {
			host, p = h, hp
		}
		servers = append(servers, "https://"+net.JoinHostPort(host, p))
	}
	tlsConf.ServerName = u.Hostname()
	k := &KubeletAPI{c: c, servers: servers,
		http:    &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}, Timeout: 10 * time.Second},
		mirrors: map[string]bool{}, done: make(chan struct{})}
	return k, nil
}

// Stop stops the rounds and returns when the last one has ended. What it registered stays in the API, as a
// stopped kubelet's Node does (the node lifecycle controller marks it NotReady). Stopping twice does nothing.
func (k *KubeletAPI) Stop() {
	k.cancel()
	<-k.done
}

// Mirrored reports whether the last round left the mirror pod name ("etcd-main-node3") in the API.
func (k *KubeletAPI) Mirrored(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.mirrors[name]
}

func (k *KubeletAPI) run(ctx context.Context) {
	defer close(k.done)
	for {
		err := k.Sync(ctx)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		k.mu.Lock()
		changed := msg != k.lastErr
		k.lastErr = msg
		server := k.servers[k.server]
		if err != nil {
			k.server = (k.server + 1) % len(k.servers)
		}
		k.mu.Unlock()
		if changed && err != nil {
			k.c.Log.Warn("kubelet API stand-in: round failed; the next one tries the next server", "node", k.c.NodeName, "server", server, "err", err)
		} else if changed {
			k.c.Log.Info("kubelet API stand-in: node and mirror pods reported", "node", k.c.NodeName, "server", server)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(k.c.Interval):
		}
	}
}

// Sync runs one round (see KubeletAPI); it returns the first call that failed.
func (k *KubeletAPI) Sync(ctx context.Context) error {
	flags, err := readKubeletFlags(filepath.Join(k.c.Root, "etc/default/kubelet"))
	if err != nil {
		return err
	}
	name := k.c.NodeName
	if v := flags["hostname-override"]; v != "" {
		name = v
	}
	labels := map[string]string{}
	for _, kv := range splitList(flags["node-labels"]) {
		key, value, _ := strings.Cut(kv, "=")
		labels[key] = value
	}
	var taints []map[string]string
	for _, t := range splitList(flags["register-with-taints"]) {
		kv, effect, _ := strings.Cut(t, ":")
		key, value, _ := strings.Cut(kv, "=")
		taints = append(taints, map[string]string{"key": key, "value": value, "effect": effect})
	}
	node := map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "labels": labels}, "spec": map[string]any{"taints": taints}}
	if err := k.call(ctx, http.MethodPost, "/api/v1/nodes", "application/json", node, nil, http.StatusCreated, http.StatusConflict); err != nil {
		return fmt.Errorf("registering node %s: %w", name, err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	status := map[string]any{
		"conditions": []map[string]string{{"type": "Ready", "status": "True", "reason": "KubeletReady",
			"message": "the kubelet API stand-in of kubeup's demo and tests reports its node", "lastHeartbeatTime": now, "lastTransitionTime": now}},
		"addresses": []map[string]string{{"type": "InternalIP", "address": k.c.Address}, {"type": "Hostname", "address": name}},
	}
	if mp := flags["max-pods"]; mp != "" {
		status["capacity"] = map[string]string{"pods": mp}
		status["allocatable"] = map[string]string{"pods": mp}
	}
	if err := k.call(ctx, http.MethodPatch, "/api/v1/nodes/"+name+"/status", "application/strategic-merge-patch+json",
		map[string]any{"status": status}, nil, http.StatusOK); err != nil {
		return fmt.Errorf("updating node %s's status: %w", name, err)
	}

	var list struct {
		Items []struct {
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := k.call(ctx, http.MethodGet, "/api/v1/namespaces/kube-system/pods?fieldSelector=spec.nodeName%3D"+url.QueryEscape(name),
		"", nil, &list, http.StatusOK); err != nil {
		return fmt.Errorf("listing node %s's pods: %w", name, err)
	}
	mirrors := map[string]bool{}
	for _, p := range list.Items {
		if _, ok := p.Metadata.Annotations["kubernetes.io/config.mirror"]; ok {
			mirrors[p.Metadata.Name] = true
		}
	}
	defer func() {
		k.mu.Lock()
		k.mirrors = mirrors
		k.mu.Unlock()
	}()
	var errs []error
	running := map[string]bool{}
	for _, p := range k.c.Pods() {
		podName := strings.TrimSuffix(p.Manifest, ".manifest")
		mirror := podName + "-" + name
		running[mirror] = true
		if !mirrors[mirror] {
			pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{
				"name": mirror, "namespace": "kube-system",
				"annotations": map[string]string{"kubernetes.io/config.mirror": "stand-in", "kubernetes.io/config.source": "file"}},
				"spec": map[string]any{"nodeName": name, "containers": []map[string]string{{"name": podName, "image": "stand-in"}}}}
			if err := k.call(ctx, http.MethodPost, "/api/v1/namespaces/kube-system/pods", "application/json", pod, nil,
				http.StatusCreated, http.StatusConflict); err != nil {
				errs = append(errs, fmt.Errorf("posting mirror pod %s: %w", mirror, err))
				continue
			}
			mirrors[mirror] = true
		}
		phase, ready := "Running", "True"
		if p.PID == 0 {
			phase, ready = "Pending", "False"
		}
		if err := k.call(ctx, http.MethodPatch, "/api/v1/namespaces/kube-system/pods/"+mirror+"/status", "application/merge-patch+json",
			map[string]any{"status": map[string]any{"phase": phase, "hostIP": k.c.Address,
				"conditions": []map[string]string{{"type": "Ready", "status": ready}}}}, nil, http.StatusOK); err != nil {
			errs = append(errs, fmt.Errorf("updating mirror pod %s's status: %w", mirror, err))
		}
	}
	for mirror := range mirrors {
		if running[mirror] {
			continue
		}
		if err := k.call(ctx, http.MethodDelete, "/api/v1/namespaces/kube-system/pods/"+mirror+"?gracePeriodSeconds=0", "", nil, nil,
			http.StatusOK, http.StatusNotFound); err != nil {
			errs = append(errs, fmt.Errorf("deleting mirror pod %s: %w", mirror, err))
			continue
		}
		delete(mirrors, mirror)
	}
	return errors.Join(errs...)
}

// call sends body (nil: none) as JSON and decodes the answer into out (nil: ignored); a status not in ok is an
// error quoting the API's message.
func (k *KubeletAPI) call(ctx context.Context, method, path, contentType string, body, out any, ok ...int) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	k.mu.Lock()
	server := k.servers[k.server]
	k.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, method, server+path, r)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	for _, code := range ok {
		if resp.StatusCode == code {
			if out != nil && code == http.StatusOK {
				return json.Unmarshal(b, out)
			}
			return nil
		}
	}
	var st struct{ Message string }
	if json.Unmarshal(b, &st) == nil && st.Message != "" {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, st.Message)
	}
	return fmt.Errorf("%s %s: %s", method, path, resp.Status)
}

// readKubeconfig returns the server of the kubeconfig's current context, and a TLS configuration with its CA and
// client certificate (embedded data only, as kubeup export kubeconfig writes them).
func readKubeconfig(path string) (string, *tls.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	var kc struct {
		CurrentContext string `json:"current-context"`
		Contexts       []struct {
			Name    string
			Context struct{ Cluster, User string }
		}
		Clusters []struct {
			Name    string
			Cluster struct {
				Server string
				CA     []byte `json:"certificate-authority-data"`
			}
		}
		Users []struct {
			Name string
			User struct {
				Cert []byte `json:"client-certificate-data"`
				Key  []byte `json:"client-key-data"`
			}
		}
	}
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	var clusterName, userName string
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			clusterName, userName = c.Context.Cluster, c.Context.User
		}
	}
	if clusterName == "" {
		return "", nil, fmt.Errorf("%s: current-context %q names no context: export it with kubeup export kubeconfig", path, kc.CurrentContext)
	}
	var server string
	pool := x509.NewCertPool()
	for _, c := range kc.Clusters {
		if c.Name == clusterName {
			server = c.Cluster.Server
			if !pool.AppendCertsFromPEM(c.Cluster.CA) {
				return "", nil, fmt.Errorf("%s: clusters[%s].cluster.certificate-authority-data holds no PEM certificate", path, c.Name)
			}
		}
	}
	if server == "" {
		return "", nil, fmt.Errorf("%s: context %q: cluster %q has no server", path, kc.CurrentContext, clusterName)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		pair, err := tls.X509KeyPair(u.User.Cert, u.User.Key)
		if err != nil {
			return "", nil, fmt.Errorf("%s: users[%s]: client-certificate-data and client-key-data: %w", path, u.Name, err)
		}
		return server, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}, nil
	}
	return "", nil, fmt.Errorf("%s: context %q: no user %q", path, kc.CurrentContext, userName)
}

// readKubeletFlags returns the --name=value flags of an environment file's DAEMON_ARGS, as nodeup writes it
// (systemd's quoting: "...", \-escapes); a flag given twice keeps its last value, as kubelet does.
func readKubeletFlags(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading kubelet's flags (nodeup writes them): %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "DAEMON_ARGS=")
		if !ok {
			continue
		}
		v = unescapeSystemd(v)
		flags := map[string]string{}
		for _, f := range strings.Fields(v) {
			name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
			flags[name] = value
		}
		return flags, nil
	}
	return nil, fmt.Errorf("%s: no DAEMON_ARGS line: run nodeup for this node", path)
}

// unescapeSystemd undoes nodeup's quoting of an environment file's value: the outer double quotes, and a
// backslash before any character.
func unescapeSystemd(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// splitList splits a comma-separated flag value, without empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
