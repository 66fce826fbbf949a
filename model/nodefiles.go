package model

import (
	"encoding/base64"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
)

// NodeFile is a file of the keystore a node's role needs (a certificate, a key, a kubeconfig), as the node
// configuration carries it and nodeup writes it: owned by root, written atomically.
type NodeFile struct {
	// Path is the absolute path on the node.
	Path string `json:"path"`
	// Mode is the file's permission bits in octal: 0644 for a certificate, 0600 for a key or a kubeconfig.
	Mode string `json:"mode"`
	// Contents is the whole file.
	Contents string `json:"contents"`
	// Sensitive marks a file that holds a private key: every plan and log shows it as (sensitive).
	Sensitive bool `json:"sensitive,omitempty"`
}

// FileMode is Mode as a file mode.
func (f NodeFile) FileMode() (uint32, error) {
	m, err := strconv.ParseUint(f.Mode, 8, 32)
	if err != nil || m&^0o777 != 0 {
		return 0, fmt.Errorf("file %s: mode %q: want permission bits in octal, such as 0600", f.Path, f.Mode)
	}
	return uint32(m), nil
}

// secret reports whether the plans must show f as (sensitive). When in doubt, it is: f is Sensitive, or its
// mode gives group and others no access (0600, 0400: keys and kubeconfigs; a mode that does not parse counts),
// or its contents hold a private key's PEM, a kubeconfig's client key or a token. A stored configuration that
// lost the Sensitive flag (edited by hand, written by an older kubeup) so still shows no key.
func (f NodeFile) secret() bool {
	if f.Sensitive {
		return true
	}
	if m, err := f.FileMode(); err != nil || m&0o077 == 0 {
		return true
	}
	for _, mark := range []string{"PRIVATE KEY", "client-key-data", "token:"} {
		if strings.Contains(f.Contents, mark) {
			return true
		}
	}
	return false
}

// PendingPEM stands, in a dry run, for a certificate or key that this update is still to issue: no file can
// hold it, so the plan shows every file and configuration that will change.
const PendingPEM = "(to be issued by this update)"

// nodeFiles are the keystore's files a node of role needs, from what ks holds. Every node: the Kubernetes CA's
// certificate (kubelet verifies its clients with it) and kube-proxy's kubeconfig. The control plane, besides:
// kube-apiserver's serving certificate and client certificates, the service-account key pair, the
// controller-manager's and the scheduler's kubeconfigs, and every etcd member's certificates (a member's volume,
// and so the member, may move to any control-plane node). No node receives a CA's key.
func nodeFiles(c *Cluster, role string, ks Issued) ([]NodeFile, error) {
	s := &c.Spec
	var files []NodeFile
	// add adds f unless the same file is there already: two fields of the spec may name one path when they mean
	// the same contents (validateKeystoreFiles), and a node configuration gives each path once (checkDerived).
	add := func(f NodeFile) {
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	cert := func(p, name string) {
		add(NodeFile{Path: p, Mode: "0644", Contents: certPEM(ks[name])})
	}
	key := func(p, name string) {
		add(NodeFile{Path: p, Mode: "0600", Contents: keyPEM(ks[name]), Sensitive: true})
	}
	pair := func(certPath, keyPath, name string) { cert(certPath, name); key(keyPath, name) }
	kubeconfig := func(p, server, name string) {
		add(NodeFile{Path: p, Mode: "0600", Contents: nodeKubeconfig(c, server, ks, name), Sensitive: true})
	}
	internalAPI := "https://" + s.API.InternalName + apiPortSuffix(s)

	// The control plane's kubelets bootstrap through their own node's kube-apiserver, the others through the
	// internal API name.
	localAPI := "https://127.0.0.1" + apiPortSuffix(s)
	bootstrapAPI := internalAPI
	if role == RoleControlPlane {
		bootstrapAPI = localAPI
	}

	cert(s.Kubelet.ClientCAFile, KeypairKubernetesCA)
	kubeconfig(s.KubeProxy.Kubeconfig, internalAPI, KeypairKubeProxy)
	if s.Kubelet.BootstrapKubeconfig != "" {
		add(NodeFile{Path: s.Kubelet.BootstrapKubeconfig, Mode: "0600", Contents: bootstrapKubeconfig(c, bootstrapAPI, ks), Sensitive: true})
	}
	if role != RoleControlPlane {
		return files, nil
	}
	a := s.KubeAPIServer
	if a.ClientCAFile != s.Kubelet.ClientCAFile {
		// kube-apiserver trusts the clients of both CAs: every component's, and kubelets' (docs/pki.md).
		add(NodeFile{Path: a.ClientCAFile, Mode: "0644", Contents: bundlePEM(ks[KeypairKubernetesCA], ks[KeypairKubeletCA])})
	}
	if a.KubeletCertificateAuthority != "" {
		cert(a.KubeletCertificateAuthority, KeypairKubeletCA)
	}
	pair(a.TLSCertFile, a.TLSPrivateKeyFile, KeypairKubeAPIServer)
	pair(a.KubeletClientCertificate, a.KubeletClientKey, KeypairKubeletAPIClient)
	cert(a.EtcdCAFile, KeypairEtcdClientsCA)
	pair(a.EtcdCertFile, a.EtcdKeyFile, KeypairEtcdAPIClient)
	cert(a.RequestheaderClientCAFile, KeypairFrontProxyCA)
	pair(a.ProxyClientCertFile, a.ProxyClientKeyFile, KeypairFrontProxyClient)
	key(a.ServiceAccountSigningKeyFile, KeypairServiceAccount)
	add(NodeFile{Path: a.ServiceAccountKeyFile, Mode: "0644", Contents: publicKeyPEM(ks[KeypairServiceAccount])})
	m := s.KubeControllerManager
	if m.ServiceAccountPrivateKeyFile != a.ServiceAccountSigningKeyFile {
		key(m.ServiceAccountPrivateKeyFile, KeypairServiceAccount)
	}
	if m.RootCAFile != s.Kubelet.ClientCAFile && m.RootCAFile != a.ClientCAFile {
		cert(m.RootCAFile, KeypairKubernetesCA)
	}
	// kube-controller-manager signs kubelets' certificates with the kubelet CA: the one CA key a node holds.
	for _, p := range [][2]string{
		{m.ClusterSigningKubeletClientCertFile, m.ClusterSigningKubeletClientKeyFile},
		{m.ClusterSigningKubeletServingCertFile, m.ClusterSigningKubeletServingKeyFile},
	} {
		if p[0] != "" && p[1] != "" {
			pair(p[0], p[1], KeypairKubeletCA)
		}
	}
	pair(ProtokubeCertFile, ProtokubeKeyFile, KeypairProtokube)
	pair(CSRApproverCertFile, CSRApproverKeyFile, KeypairCSRApprover)
	// The controller-manager and the scheduler talk to the kube-apiserver of their own node.
	kubeconfig(m.Kubeconfig, localAPI, KeypairKubeControllerManager)
	kubeconfig(s.KubeScheduler.Kubeconfig, localAPI, KeypairKubeScheduler)

	cert(EtcdPeersCAFile, KeypairEtcdPeersCA)
	cert(EtcdClientsCAFile, KeypairEtcdClientsCA)
	for _, e := range s.EtcdClusters {
		for _, mem := range e.Members {
			p := EtcdMemberPKI(e.Name, mem.Name)
			pair(p.PeerCert, p.PeerKey, EtcdPeerKeypair(e.Name, mem.Name))
			pair(p.ServerCert, p.ServerKey, EtcdServerKeypair(e.Name, mem.Name))
		}
	}
	return files, nil
}

// Where protokube's client certificates are on a control-plane node: the one that applies kubeup's objects in
// the cluster, and the CSR approver's.
const (
	ProtokubeCertFile   = protokubePKI + "/protokube.crt"
	ProtokubeKeyFile    = protokubePKI + "/protokube.key"
	CSRApproverCertFile = protokubePKI + "/csr-approver.crt"
	CSRApproverKeyFile  = protokubePKI + "/csr-approver.key"
)

// Where etcd's CAs' certificates are on a control-plane node.
const (
	EtcdPeersCAFile   = EtcdPKI + "/peers-ca.crt"
	EtcdClientsCAFile = EtcdPKI + "/clients-ca.crt"
)

// EtcdMemberFiles are the paths of a member's certificates and keys on a control-plane node.
type EtcdMemberFiles struct {
	PeerCert, PeerKey, ServerCert, ServerKey string
}

// EtcdMemberPKI is where member m of etcd cluster e finds its certificates: /srv/kubernetes/etcd/<e>-<m>-*.
func EtcdMemberPKI(e, m string) EtcdMemberFiles {
	base := path.Join(EtcdPKI, e+"-"+m)
	return EtcdMemberFiles{
		PeerCert: base + "-peer.crt", PeerKey: base + "-peer.key",
		ServerCert: base + "-server.crt", ServerKey: base + "-server.key",
	}
}

func apiPortSuffix(s *ClusterSpec) string {
	if p := s.KubeAPIServer; p != nil && p.SecurePort != nil && *p.SecurePort != 443 {
		return ":" + strconv.Itoa(int(*p.SecurePort))
	}
	return ""
}

func certPEM(is *IssuedKeypair) string {
	if is == nil {
		return PendingPEM
	}
	return is.CertPEM
}

func keyPEM(is *IssuedKeypair) string {
	if is == nil {
		return PendingPEM
	}
	return is.KeyPEM.Reveal()
}

// bundlePEM is the certificates of several CAs in one file; PendingPEM while one is still to be issued.
func bundlePEM(cas ...*IssuedKeypair) string {
	var b strings.Builder
	for _, ca := range cas {
		if ca == nil {
			return PendingPEM
		}
		b.WriteString(ca.CertPEM)
	}
	return b.String()
}

func publicKeyPEM(is *IssuedKeypair) string {
	if is == nil {
		return PendingPEM
	}
	return is.PublicKeyPEM
}

// nodeKubeconfig is a kubeconfig for the client certificate name, trusting the Kubernetes CA.
func nodeKubeconfig(c *Cluster, server string, ks Issued, name string) string {
	return Kubeconfig(c.Metadata.Name, server, certPEM(ks[KeypairKubernetesCA]), name, certPEM(ks[name]), engine.NewSecret(keyPEM(ks[name]))).Reveal()
}

// BootstrapTokenUser is the user of a bootstrap kubeconfig.
const BootstrapTokenUser = "kubelet-bootstrap"

// bootstrapKubeconfig is kubelet's bootstrap kubeconfig: the bootstrap token, trusting the Kubernetes CA.
func bootstrapKubeconfig(c *Cluster, server string, ks Issued) string {
	token := PendingPEM
	if is := ks[KeypairBootstrapToken]; is != nil {
		token = is.Token.Reveal()
	}
	return kubeconfigOf(c.Metadata.Name, server, certPEM(ks[KeypairKubernetesCA]), BootstrapTokenUser, map[string]any{"token": token}).Reveal()
}

// Kubeconfig is a kubeconfig of one cluster, one user and one context, all named after the cluster except the
// user (named user), with the CA's certificate and the user's certificate and key inline.
func Kubeconfig(cluster, server, caPEM, user, certPEM string, keyPEM engine.Secret) engine.Secret {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return kubeconfigOf(cluster, server, caPEM, user, map[string]any{
		"client-certificate-data": b64(certPEM), "client-key-data": b64(keyPEM.Reveal()),
	})
}

// kubeconfigOf is a kubeconfig of one cluster, one user (with the credentials creds) and one context.
func kubeconfigOf(cluster, server, caPEM, user string, creds map[string]any) engine.Secret {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	kc := map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{"name": cluster, "cluster": map[string]any{
			"server": server, "certificate-authority-data": b64(caPEM),
		}}},
		"users": []any{map[string]any{"name": user, "user": creds}},
		"contexts": []any{map[string]any{"name": cluster, "context": map[string]any{
			"cluster": cluster, "user": user,
		}}},
		"current-context": cluster,
	}
	b, err := yaml.Marshal(kc)
	if err != nil {
		panic(fmt.Sprintf("model: encoding a kubeconfig: %v", err)) // maps of strings always encode
	}
	return engine.NewSecret(string(b))
}
