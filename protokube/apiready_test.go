package protokube

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
)

// testCA is a CA of the tests, and what it signs.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key signed by ca, as PEM: a server's for localhost and 127.0.0.1, or a client's.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// fakeAPIServer serves /readyz over HTTPS on 127.0.0.1 with a certificate of ca, answering what readyz says.
func fakeAPIServer(t *testing.T, ca *testCA, readyz http.HandlerFunc, clientCA bool) (port int32) {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, "kube-apiserver", true)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(readyz)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCA {
		pool := x509.NewCertPool()
		pool.AddCert(ca.cert)
		srv.TLS.ClientCAs, srv.TLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return int32(srv.Listener.Addr().(*net.TCPAddr).Port)
}

// apiNodeConfig is a node configuration whose kube-apiserver serves on port, and a root that holds the CA's
// certificate where the configuration says (and kube-apiserver's client certificate to kubelets).
//
// kube-apiserver's client CA file holds the cluster's CA and kubeletCA (it trusts kubelets' client certificates);
// kubelet's client CA file the cluster's CA alone.
func apiNodeConfig(t *testing.T, ca, kubeletCA *testCA, port int32, anonymous bool) (*model.NodeConfig, string) {
	t.Helper()
	root := t.TempDir()
	a := &model.KubeAPIServerConfig{SecurePort: &port, BindAddress: "0.0.0.0", AnonymousAuth: &anonymous,
		ClientCAFile: "/srv/kubernetes/kube-apiserver/client-ca.crt", KubeletClientCertificate: "/srv/kubernetes/kube-apiserver/kubelet-api.crt",
		KubeletClientKey: "/srv/kubernetes/kube-apiserver/kubelet-api.key"}
	k := &model.KubeletConfig{ClientCAFile: "/srv/kubernetes/ca.crt"}
	certPEM, keyPEM := ca.issue(t, "kubelet-api", false)
	bundle := append(append([]byte{}, ca.pem...), kubeletCA.pem...)
	for p, b := range map[string][]byte{a.ClientCAFile: bundle, k.ClientCAFile: ca.pem, a.KubeletClientCertificate: certPEM, a.KubeletClientKey: keyPEM} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	nc := &model.NodeConfig{Cluster: &model.Cluster{}}
	nc.Cluster.Spec.KubeAPIServer, nc.Cluster.Spec.Kubelet = a, k
	return nc, root
}

// TestAPIReady: this node's kube-apiserver is ready when its /readyz answers 200 over HTTPS with a certificate of
// the cluster's CA; not while it runs its post-start hooks (the failing checks are said), not when nothing
// listens (first boot), not with a certificate of another CA; with anonymous requests refused it is asked with
// kube-apiserver's client certificate.
func TestAPIReady(t *testing.T) {
	ctx := context.Background()
	ca := newTestCA(t)
	var ready atomic.Bool
	readyz := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if !ready.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("[+]ping ok\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\n[+]etcd ok\nreadyz check failed\n"))
			return
		}
		w.Write([]byte("ok"))
	}
	kubeletCA := newTestCA(t)
	nc, root := apiNodeConfig(t, ca, kubeletCA, fakeAPIServer(t, ca, readyz, false), true)
	err := apiReady(ctx, root, nc)
	if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error: poststarthook/rbac/bootstrap-roles failed") {
		t.Errorf("while its post-start hooks run: %v, want not ready, with the failing check", err)
	}
	ready.Store(true)
	if err := apiReady(ctx, root, nc); err != nil {
		t.Errorf("ready: %v", err)
	}
	if got := apiState(nil); got != "ready" {
		t.Errorf("apiState(nil) = %q", got)
	}

	// Nothing listens: a port of a listener that was closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := int32(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	*nc.Cluster.Spec.KubeAPIServer.SecurePort = closed
	if err := apiReady(ctx, root, nc); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("no kube-apiserver: %v, want connection refused", err)
	}

	other, otherRoot := apiNodeConfig(t, newTestCA(t), kubeletCA, fakeAPIServer(t, ca, readyz, false), true)
	if err := apiReady(ctx, otherRoot, other); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("a server of another CA: %v, want it refused", err)
	}
	// kube-apiserver trusts the kubelet CA's clients, but a server the kubelet CA signed (a kubelet's serving
	// certificate) is not kube-apiserver.
	impostor, impostorRoot := apiNodeConfig(t, ca, kubeletCA, fakeAPIServer(t, kubeletCA, readyz, false), true)
	if err := apiReady(ctx, impostorRoot, impostor); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("a server the kubelet CA signed: %v, want it refused", err)
	}

	anonymous, anonRoot := apiNodeConfig(t, ca, kubeletCA, fakeAPIServer(t, ca, readyz, true), true)
	if err := apiReady(ctx, anonRoot, anonymous); err == nil {
		t.Error("a server that requires a client certificate answered an anonymous request")
	}
	nc, root = apiNodeConfig(t, ca, kubeletCA, fakeAPIServer(t, ca, readyz, true), false)
	if err := apiReady(ctx, root, nc); err != nil {
		t.Errorf("anonymousAuth false, with kube-apiserver's client certificate: %v", err)
	}
	if err := os.Remove(filepath.Join(root, nc.Cluster.Spec.KubeAPIServer.KubeletClientKey)); err != nil {
		t.Fatal(err)
	}
	if err := apiReady(ctx, root, nc); err == nil || !strings.Contains(err.Error(), "anonymousAuth: false") {
		t.Errorf("without the client key: %v", err)
	}
	if err := apiReady(ctx, root, &model.NodeConfig{}); err == nil {
		t.Error("a configuration without kube-apiserver: ready")
	}
}
