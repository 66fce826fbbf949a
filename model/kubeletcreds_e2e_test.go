//go:build e2e

package model_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/kubetasks"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

// kubeWorld is protokube's world of the kube objects' tasks: its two clients of kube-apiserver.
type kubeWorld struct{ kube, approver *kubetasks.Client }

func (w *kubeWorld) KubeAPI() *kubetasks.Client     { return w.kube }
func (w *kubeWorld) ApproverAPI() *kubetasks.Client { return w.approver }

// credsCluster is a real kube-apiserver and kube-controller-manager, run with the flags and files of a control
// plane node as kubeup writes them, on an etcd of their own.
type credsCluster struct {
	root, server string
	caPEM        []byte
	nc           *model.NodeConfig
	ks           map[string]*pkitasks.Issued
	world        *kubeWorld
}

// startCredsCluster runs etcd (Debian's, plain http on a free loopback port: the keystore's etcd TLS is
// TestEtcdPodRunsEtcd's), kube-apiserver and kube-controller-manager (KUBEUP_KUBE_BIN) with the model's flags,
// their paths moved under a temporary root where the control plane's files of the stored node configuration are
// written. Every process is stopped by its PID when the test ends.
func startCredsCluster(t *testing.T) *credsCluster {
	t.Helper()
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "etcd")
	bins := e2e.KubeBinaries(t)

	u, uigs := model.UserSpec(t, model.CloudLocal, 1)
	apiPort, etcdPort, kcmPort := freePort(t), freePort(t), freePort(t)
	u.Spec.KubeAPIServer = &model.KubeAPIServerConfig{SecurePort: &apiPort, BindAddress: "127.0.0.1"}
	c, igs := model.Complete(u, uigs)
	if err := model.Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	cloud, store := localCloud(t, c)
	runCloudGraph(t, c, igs, cloud, engine.Apply)
	nc, _ := storedNodeConfig(t, store, c.Metadata.Name, "control-plane-a")
	cc := &credsCluster{root: t.TempDir(), nc: nc, ks: storedKeystore(t, store, c.Metadata.Name)}
	for _, f := range nc.Files {
		p := filepath.Join(cc.root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode, _ := f.FileMode()
		if err := os.WriteFile(p, []byte(f.Contents), os.FileMode(mode)); err != nil {
			t.Fatal(err)
		}
	}
	logs := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
				t.Logf("%s's log ends:\n%s", n, e2e.Tail(filepath.Join(logs, n+".log"), 30))
			}
		}
	})
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	e2e.StartProcess(t, exec.Command("etcd", "--data-dir="+filepath.Join(cc.root, "etcd"), "--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL, fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", freePort(t)),
		"--listen-metrics-urls=", "--log-level=warn"), filepath.Join(logs, "etcd.log"))

	// The model's flags, their files under root, and etcd's (plain) URL.
	rooted := func(flags []string, drop ...string) []string {
		var out []string
		for _, f := range flags {
			name, value, _ := strings.Cut(f, "=")
			if slices.Contains(drop, name) {
				continue
			}
			if strings.HasPrefix(value, "/srv/") || strings.HasPrefix(value, "/var/lib/") {
				value = filepath.Join(cc.root, value)
			}
			out = append(out, name+"="+value)
		}
		return out
	}
	api := append(rooted(model.Flags(c.Spec.KubeAPIServer), "--etcd-servers", "--etcd-servers-overrides", "--etcd-cafile", "--etcd-certfile", "--etcd-keyfile"),
		"--etcd-servers="+etcdURL)
	e2e.StartProcess(t, exec.Command(bins["/usr/local/bin/kube-apiserver"], api...), filepath.Join(logs, "kube-apiserver.log"))
	kcm := append(rooted(model.Flags(c.Spec.KubeControllerManager)), fmt.Sprintf("--secure-port=%d", kcmPort))
	e2e.StartProcess(t, exec.Command(bins["/usr/local/bin/kube-controller-manager"], kcm...), filepath.Join(logs, "kube-controller-manager.log"))

	cc.server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cc.caPEM = []byte(cc.ks[model.KeypairKubernetesCA].CertPEM)
	client := func(name string) *kubetasks.Client {
		is := cc.ks[name]
		cl, err := kubetasks.NewClient(cc.server, nodegraph.FieldManager, cc.caPEM, []byte(is.CertPEM), []byte(is.KeyPEM.Reveal()))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cc.world = &kubeWorld{kube: client(model.KeypairProtokube), approver: client(model.KeypairCSRApprover)}
	e2e.WaitFor(t, 3*time.Minute, "kube-apiserver to be ready", func() (string, bool) {
		code, body, err := cc.raw(nil, "", http.MethodGet, "/readyz", nil)
		return fmt.Sprintf("%d %s %v", code, body, err), err == nil && code == 200
	})
	return cc
}

// raw makes a request as an attacker would: with cert (a client certificate) or token (a bearer token), or
// neither. It returns the status and the body.
func (cc *credsCluster) raw(cert *tls.Certificate, token, method, path string, body any) (int, []byte, error) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cc.caPEM)
	conf := &tls.Config{RootCAs: roots}
	if cert != nil {
		conf.Certificates = []tls.Certificate{*cert}
	}
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, cc.server+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: conf, Proxy: nil}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// converge runs the objects' graph (nodegraph.AddKubeObjects: RBAC, the token's Secret, the approver's decisions)
// as protokube's round does, and returns its plan.
func (cc *credsCluster) converge(t *testing.T, target engine.Target) *engine.Plan {
	t.Helper()
	g := engine.NewGraph[*kubeWorld]()
	if err := nodegraph.AddKubeObjects(g, cc.nc, nil); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(context.Background(), g, cc.world, engine.Options{Target: target})
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return res.Plan
}

// newCSR is a kubelet's certificate request for CN system:node:<node>, O system:nodes, with the given names,
// and its key.
func newCSR(t *testing.T, node string, dns []string, ips []string) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), key
}

type csrStatus struct {
	Status struct {
		Certificate string `json:"certificate"`
		Conditions  []struct {
			Type, Reason, Message string
		} `json:"conditions"`
	} `json:"status"`
}

// submit creates a CertificateSigningRequest named name as the credential (cert or token) gives.
func (cc *credsCluster) submit(t *testing.T, cert *tls.Certificate, token, name, signer string, request []byte, usages ...string) {
	t.Helper()
	if code, body, err := cc.post(cert, token, name, signer, request, usages...); err != nil || code != http.StatusCreated {
		t.Fatalf("creating CSR %s: %d %v\n%s", name, code, err, body)
	}
}

func (cc *credsCluster) post(cert *tls.Certificate, token, name, signer string, request []byte, usages ...string) (int, []byte, error) {
	return cc.raw(cert, token, http.MethodPost, "/apis/certificates.k8s.io/v1/certificatesigningrequests", map[string]any{
		"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"request": base64.StdEncoding.EncodeToString(request), "signerName": signer, "usages": usages},
	})
}

// decided converges (the approver decides), then waits for CSR name to be denied, or approved and signed.
func (cc *credsCluster) decided(t *testing.T, name string) csrStatus {
	t.Helper()
	cc.converge(t, engine.Apply)
	return e2e.WaitFor(t, 2*time.Minute, "CSR "+name+" to be denied, or approved and signed", func() (csrStatus, bool) {
		var s csrStatus
		if err := cc.world.kube.Get(context.Background(), "/apis/certificates.k8s.io/v1/certificatesigningrequests/"+name, &s); err != nil {
			return s, false
		}
		if _, denied := hasCondition(s, "Denied"); denied {
			return s, true
		}
		_, approved := hasCondition(s, "Approved")
		return s, approved && s.Status.Certificate != ""
	})
}

func hasCondition(s csrStatus, typ string) (string, bool) {
	for _, c := range s.Status.Conditions {
		if c.Type == typ {
			return c.Message, true
		}
	}
	return "", false
}

// issued is the certificate a signed CSR holds, verified against the kubelet CA for usage.
func (cc *credsCluster) issued(t *testing.T, s csrStatus, usage x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	der, err := base64.StdEncoding.DecodeString(s.Status.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(der)
	if b == nil {
		t.Fatalf("the CSR's certificate is not PEM")
	}
	crt, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cc.ks[model.KeypairKubeletCA].Cert)
	if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Errorf("the certificate does not verify against the kubelet CA: %v", err)
	}
	return crt
}

// TestKubeletCredentialsE2E runs kube-apiserver and kube-controller-manager as kubeup configures them, and the
// objects' graph protokube runs: the objects are applied and a second run plans nothing; a bootstrap-token
// request for a new node's name is approved and signed by the kubelet CA (CN system:node:<name>, O
// system:nodes), and that certificate is accepted by kube-apiserver as the node; the token asking for the name
// of a Node that exists is denied; a node asking with its own certificate for another node's name is denied; a
// serving certificate for another node's address is denied, for its own addresses signed. Each as an attacker
// would: raw HTTP and x509, no kubelet.
func TestKubeletCredentialsE2E(t *testing.T) {
	cc := startCredsCluster(t)
	ctx := context.Background()
	const csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"

	// A replaced token's Secret (kubeup's label) and someone else's token (no label).
	for name, labels := range map[string]map[string]any{"bootstrap-token-old000": {nodegraph.BootstrapTokenLabel: "true"}, "bootstrap-token-other0": nil} {
		b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
			"metadata":   map[string]any{"name": name, "namespace": "kube-system", "labels": labels},
			"stringData": map[string]any{"token-id": name[len(name)-6:], "token-secret": "0123456789abcdef"}})
		if err := cc.world.kube.Apply(ctx, "/api/v1/namespaces/kube-system/secrets/"+name, b, nil); err != nil {
			t.Fatal(err)
		}
	}

	// The objects, then no change.
	if p := cc.converge(t, engine.Apply); len(p.Changes) < 5 {
		t.Errorf("the first run made %d changes, want the 5 objects at least", len(p.Changes))
	}
	if p := cc.converge(t, engine.DryRun); !p.Empty() {
		var b strings.Builder
		p.WriteText(&b)
		t.Fatalf("after the apply, a dry run plans changes against the real API:\n%s", b.String())
	}
	var sec map[string]any
	if err := cc.world.kube.Get(ctx, "/api/v1/namespaces/kube-system/secrets/bootstrap-token-old000", &sec); !kubetasks.IsNotFound(err) {
		t.Errorf("the replaced token's Secret is still there: %v", err)
	}
	if err := cc.world.kube.Get(ctx, "/api/v1/namespaces/kube-system/secrets/bootstrap-token-other0", &sec); err != nil {
		t.Errorf("a token's Secret kubeup did not label was touched: %v", err)
	}
	token := cc.ks[model.KeypairBootstrapToken].Token.Reveal()

	// An existing node, registered by an administrator (protokube's identity is system:masters).
	existing := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "w-existing"},
		"status": map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": "10.9.9.2"}, map[string]any{"type": "Hostname", "address": "w-existing"}}}}
	b, _ := json.Marshal(existing)
	if err := cc.world.kube.Apply(ctx, "/api/v1/nodes/w-existing", b, nil); err != nil {
		t.Fatal(err)
	}

	// 1. The bootstrap token, for a new node's name: approved, signed.
	req, key := newCSR(t, "w-new", nil, nil)
	cc.submit(t, nil, token, "boot-w-new", kubetasks.SignerKubeletClient, req, "digital signature", "client auth")
	s := cc.decided(t, "boot-w-new")
	if msg, denied := hasCondition(s, "Denied"); denied {
		t.Fatalf("the bootstrap of a new node was denied: %s", msg)
	}
	crt := cc.issued(t, s, x509.ExtKeyUsageClientAuth)
	if crt.Subject.CommonName != "system:node:w-new" || !slices.Equal(crt.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("issued subject %s, want CN system:node:w-new, O system:nodes", crt.Subject)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _ := base64.StdEncoding.DecodeString(s.Status.Certificate)
	nodeCert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	// kube-apiserver takes it as the node: the node registers itself, with its address.
	code, body, err := cc.raw(&nodeCert, "", http.MethodPost, "/api/v1/nodes", map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": "w-new"},
		"status":   map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": "10.9.9.3"}, map[string]any{"type": "Hostname", "address": "w-new"}}}})
	if err != nil || code != http.StatusCreated {
		t.Fatalf("node w-new registering itself with its new certificate: %d %v\n%s", code, err, body)
	}

	// The Node authorizer lets a node list the Nodes with its own certificate (system:node:w-new, group
	// system:nodes), their addresses included: a worker's protokube reads them with kubelet's credentials, to route
	// the other Nodes' pod ranges (docs/networking.md).
	code, body, err = cc.raw(&nodeCert, "", http.MethodGet, "/api/v1/nodes", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("node w-new listing the Nodes with its own certificate: %d %v\n%s", code, err, body)
	}
	var nodes struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Status   struct {
				Addresses []struct{ Type, Address string } `json:"addresses"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &nodes); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				seen[n.Metadata.Name] = a.Address
			}
		}
	}
	if want := map[string]string{"w-existing": "10.9.9.2", "w-new": "10.9.9.3"}; !maps.Equal(seen, want) {
		t.Errorf("node w-new lists the Nodes' internal addresses %v, want %v", seen, want)
	}

	// 2. The token again, for the name of a Node that exists: denied.
	req, _ = newCSR(t, "w-existing", nil, nil)
	cc.submit(t, nil, token, "boot-w-existing", kubetasks.SignerKubeletClient, req, "digital signature", "client auth")
	if msg, denied := hasCondition(cc.decided(t, "boot-w-existing"), "Denied"); !denied || !strings.Contains(msg, "Node w-existing exists") {
		t.Errorf("the bootstrap token asking for an existing node's name: denied %t, %q", denied, msg)
	}

	// 3. Node w-new, with its own certificate, asks for w-existing's name: NodeRestriction refuses the request
	// itself (the approver would deny it too: TestApproverDecisions).
	req, _ = newCSR(t, "w-existing", nil, nil)
	code, body, err = cc.post(&nodeCert, "", "takeover-w-existing", kubetasks.SignerKubeletClient, req, "digital signature", "client auth")
	switch {
	case err != nil:
		t.Fatal(err)
	case code == http.StatusForbidden && strings.Contains(string(body), "can only create a node CSR with CN=system:node:w-new"):
		t.Logf("a node asking for another node's name is refused by NodeRestriction: %s", body)
	case code == http.StatusCreated:
		if msg, denied := hasCondition(cc.decided(t, "takeover-w-existing"), "Denied"); !denied || !strings.Contains(msg, "another node's name") {
			t.Errorf("a node asking for another node's name: denied %t, %q", denied, msg)
		}
	default:
		t.Errorf("a node asking for another node's name: %d %s", code, body)
	}

	// 4. Serving: for another node's address, denied; for its own, signed.
	req, _ = newCSR(t, "w-new", nil, []string{"10.9.9.2"})
	cc.submit(t, &nodeCert, "", "serving-stolen", kubetasks.SignerKubeletServing, req, "digital signature", "server auth")
	if msg, denied := hasCondition(cc.decided(t, "serving-stolen"), "Denied"); !denied || !strings.Contains(msg, "10.9.9.2") {
		t.Errorf("a serving certificate for another node's address: denied %t, %q", denied, msg)
	}
	req, _ = newCSR(t, "w-new", []string{"w-new"}, []string{"10.9.9.3"})
	cc.submit(t, &nodeCert, "", "serving-own", kubetasks.SignerKubeletServing, req, "digital signature", "server auth")
	s = cc.decided(t, "serving-own")
	if msg, denied := hasCondition(s, "Denied"); denied {
		t.Fatalf("a serving certificate for the node's own addresses was denied: %s", msg)
	}
	cc.issued(t, s, x509.ExtKeyUsageServerAuth)

	// 5. The node renews its client certificate as itself: approved (kube-controller-manager's built-in approver
	// through kubeup:kubelet-renewal, or kubeup's: whichever is first), signed for the same name.
	req, _ = newCSR(t, "w-new", nil, nil)
	cc.submit(t, &nodeCert, "", "renew-w-new", kubetasks.SignerKubeletClient, req, "digital signature", "client auth")
	s = cc.decided(t, "renew-w-new")
	if msg, denied := hasCondition(s, "Denied"); denied {
		t.Fatalf("a node's renewal of its own certificate was denied: %s", msg)
	}
	if crt := cc.issued(t, s, x509.ExtKeyUsageClientAuth); crt.Subject.CommonName != "system:node:w-new" {
		t.Errorf("the renewed certificate is for %s", crt.Subject.CommonName)
	}

	// The approver's identity holds what its RBAC gives, nothing more.
	var secrets map[string]any
	if err := cc.world.approver.Get(ctx, "/api/v1/namespaces/kube-system/secrets", &secrets); !kubetasks.IsForbidden(err) {
		t.Errorf("the approver's identity read Secrets: %v", err)
	}
	var list map[string]any
	if err := cc.world.approver.Get(ctx, csrs, &list); err != nil {
		t.Errorf("the approver's identity may not list requests: %v", err)
	}
}
