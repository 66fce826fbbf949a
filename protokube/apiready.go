package protokube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"kubeup.dev/kubeup/model"
)

// readyzTimeout bounds one check of this node's kube-apiserver: one that does not answer within it is not ready.
const readyzTimeout = 5 * time.Second

// apiReady checks whether this node's own kube-apiserver is ready to serve: it answers GET /readyz with 200 over
// HTTPS on this node (127.0.0.1, or the address it binds to when that is one address) at its secure port, its
// serving certificate verified against the Kubernetes CA alone, as the node holds it (kubelet's --client-ca-file;
// not kube-apiserver's, which also trusts the kubelet CA, whose serving certificates are kubelets'). The request is anonymous, which RBAC allows for /readyz
// (system:public-info-viewer); with anonymous requests refused (anonymousAuth: false) it presents
// kube-apiserver's own client certificate to kubelets, which the same CA signs. nil: ready; else why not, as
// the round logs it: connection refused (no kube-apiserver runs yet), or the status and the checks that fail
// ("readyz check failed", while its post-start hooks run).
func apiReady(ctx context.Context, root string, nc *model.NodeConfig) error {
	if nc.Cluster == nil || nc.Cluster.Spec.KubeAPIServer == nil {
		return errors.New("the node configuration names no kube-apiserver")
	}
	a := nc.Cluster.Spec.KubeAPIServer
	if nc.Cluster.Spec.Kubelet == nil || nc.Cluster.Spec.Kubelet.ClientCAFile == "" {
		return errors.New("the node configuration names no file of the Kubernetes CA (spec.kubelet.clientCAFile)")
	}
	caFile := nc.Cluster.Spec.Kubelet.ClientCAFile
	ca, err := os.ReadFile(filepath.Join(root, caFile))
	if err != nil {
		return fmt.Errorf("reading the cluster's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	// The serving certificate names localhost and 127.0.0.1 (model's kube-apiserver keypair): "localhost" is
	// verified whichever address kube-apiserver binds to.
	conf := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if a.AnonymousAuth != nil && !*a.AnonymousAuth {
		cert, err := tls.LoadX509KeyPair(filepath.Join(root, a.KubeletClientCertificate), filepath.Join(root, a.KubeletClientKey))
		if err != nil {
			return fmt.Errorf("anonymous requests are refused (anonymousAuth: false) and kube-apiserver's client certificate cannot be read: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	client := &http.Client{Timeout: readyzTimeout, Transport: &http.Transport{TLSClientConfig: conf, Proxy: nil, DisableKeepAlives: true}}
	url := localAPI(a) + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	// The body lists each check, "[-]name failed: reason withheld" for those that fail, then the verdict.
	var failed []string
	for line := range strings.Lines(string(body)) {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "[-]") {
			failed = append(failed, strings.TrimPrefix(l, "[-]"))
		}
	}
	if len(failed) == 0 {
		failed = append(failed, strings.TrimSpace(string(body)))
	}
	return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.Join(failed, "; "))
}

// localAPI is this node's kube-apiserver's URL: https://127.0.0.1:<securePort>, or the address it binds to when
// that is one address.
func localAPI(a *model.KubeAPIServerConfig) string {
	port := int32(443)
	if a.SecurePort != nil {
		port = *a.SecurePort
	}
	host := "127.0.0.1"
	if b, err := netip.ParseAddr(a.BindAddress); err == nil && !b.IsUnspecified() {
		host = b.String()
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// apiState is what the round's log line says of this node's kube-apiserver: "ready", or why it is not.
func apiState(err error) string {
	if err == nil {
		return "ready"
	}
	return "not ready: " + err.Error()
}
