package model_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io/fs"
	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/storetasks/storetest"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/nodetasks"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

// memStore is an in-memory state store (storetest); the real ones are tested in statestore.
type memStore = storetest.MemStore

// localCloud is the local provider's world in a temporary directory, with an in-memory state store.
func localCloud(t *testing.T, c *model.Cluster) (*localtasks.Cloud, *memStore) {
	t.Helper()
	dir := t.TempDir()
	store := &memStore{Objects: map[string]string{}}
	cloud, err := localtasks.NewCloud(filepath.Join(dir, "pool"), filepath.Join(dir, "dns", c.Spec.DNSZone+".zone"), c.Spec.DNSZone, store)
	if err != nil {
		t.Fatal(err)
	}
	return cloud, store
}

// cloudRun is one run of the local cloud graph: its plan as text and JSON, and what it logged.
type cloudRun struct {
	plan             *engine.Plan
	text, json, logs string
}

func runCloudGraph(t *testing.T, c *model.Cluster, igs []*model.InstanceGroup, cloud *localtasks.Cloud, target engine.Target) cloudRun {
	t.Helper()
	g, err := cloudgraph.BuildLocalCloudGraph(c, igs, cloudgraph.LocalCloudState{})
	if err != nil {
		t.Fatal(err)
	}
	var logs, progress bytes.Buffer
	res, err := engine.Run(context.Background(), g, cloud, engine.Options{
		Target:   target,
		Logger:   slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Progress: &progress,
	})
	if err != nil {
		t.Fatalf("%s: %v\nlogs:\n%s", target, err, logs.String())
	}
	var text, js bytes.Buffer
	if err := res.Plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := res.Plan.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	return cloudRun{plan: res.Plan, text: text.String(), json: js.String(), logs: logs.String() + progress.String()}
}

// appliedCluster is a complete local cluster of controlPlanes control-plane groups and a group "nodes", its cloud
// graph applied to a fresh local cloud.
func appliedCluster(t *testing.T, controlPlanes int) (*model.Cluster, []*model.InstanceGroup, *localtasks.Cloud, *memStore) {
	t.Helper()
	c, igs := model.CompleteSpec(t, model.CloudLocal, controlPlanes)
	if err := model.Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	cloud, store := localCloud(t, c)
	runCloudGraph(t, c, igs, cloud, engine.Apply)
	return c, igs, cloud, store
}

// storedKeystore decodes every keypair of the cluster's keystore in the store, by name.
func storedKeystore(t *testing.T, store *memStore, cluster string) map[string]*pkitasks.Issued {
	t.Helper()
	ks := map[string]*pkitasks.Issued{}
	prefix := model.KeystoreDir(cluster) + "/"
	for p, obj := range store.Snapshot() {
		name, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		decode := pkitasks.Decode
		if name == model.KeypairBootstrapToken {
			decode = pkitasks.DecodeToken
		}
		is, err := decode([]byte(obj))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ks[name] = is
	}
	return ks
}

// storedNodeConfig reads an instance group's node configuration back from the store, whole (with its role's
// configuration, as a node reads it), and returns it with the stored object that holds its files and keys: the
// role's configuration.
func storedNodeConfig(t *testing.T, store *memStore, cluster, ig string) (*model.NodeConfig, string) {
	t.Helper()
	p := model.NodeConfigPath(cluster, ig)
	snap := store.Snapshot()
	obj, ok := snap[p]
	if !ok {
		t.Fatalf("no node configuration %s", p)
	}
	var role string
	nc, err := model.DecodeNodeConfigObject(p, []byte(obj), func(name string) (string, []byte, error) {
		where := path.Join(path.Dir(p), name)
		o, ok := snap[where]
		if !ok {
			return where, nil, fs.ErrNotExist
		}
		role = o
		return where, []byte(o), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if role == "" {
		t.Fatalf("%s names no role's configuration: kubeup stores the cluster and files once per role", p)
	}
	return nc, role
}

// keyForms are the forms a private key could leak in: a line of its PEM's body, and a stretch of the base64 of
// its whole PEM (as a kubeconfig's client-key-data holds it). What every P-256 key's PEM shares is left out: the
// armour (28 bytes) and the DER that precedes the private scalar (48 characters of the body's first line), so
// the stretch is made of the key's own bytes (from byte 81 of the PEM).
func keyForms(is *pkitasks.Issued) []string {
	if _, secret, ok := is.TokenParts(); ok {
		return []string{secret.Reveal()} // a bootstrap token: its secret, however it is quoted
	}
	p := is.KeyPEM.Reveal()
	var forms []string
	for _, line := range strings.Split(p, "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			forms = append(forms, line)
		}
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(p))
	return append(forms, b64[108:168])
}

// holdsKey reports whether s holds any form of is's private key.
func holdsKey(s string, is *pkitasks.Issued) bool {
	for _, f := range keyForms(is) {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// keyNames lists the keypairs whose private key s holds.
func keyNames(s string, ks map[string]*pkitasks.Issued) []string {
	var names []string
	for _, n := range slices.Sorted(maps.Keys(ks)) {
		if holdsKey(s, ks[n]) {
			names = append(names, n)
		}
	}
	return names
}

func filesByPath(nc *model.NodeConfig) map[string]model.NodeFile {
	m := map[string]model.NodeFile{}
	for _, f := range nc.Files {
		m[f.Path] = f
	}
	return m
}

// TestKeystoreFilesByRole checks what each role's node configuration carries, as the cloud graph stored it: a
// worker only the Kubernetes CA's certificate and kube-proxy's kubeconfig; the control plane no CA's key, and
// the certificates of every etcd member; every file that holds a key sensitive and 0600.
func TestKeystoreFilesByRole(t *testing.T) {
	c, igs, _, store := appliedCluster(t, 3)
	name := c.Metadata.Name
	ks := storedKeystore(t, store, name)
	if len(ks) != 7+10+2*2*3 {
		t.Errorf("the keystore holds %d keypairs, want 29 (5 CAs, the service-account key, the bootstrap token, 10 certificates, 2 per etcd member)", len(ks))
	}
	cas := []string{model.KeypairKubernetesCA, model.KeypairEtcdPeersCA, model.KeypairEtcdClientsCA, model.KeypairFrontProxyCA}

	for _, ig := range igs {
		t.Run(ig.Metadata.Name, func(t *testing.T) {
			nc, obj := storedNodeConfig(t, store, name, ig.Metadata.Name)
			files := filesByPath(nc)
			if len(files) != len(nc.Files) {
				t.Errorf("a path is given twice: %d files, %d paths", len(nc.Files), len(files))
			}
			for _, f := range nc.Files {
				keys := keyNames(f.Contents, ks)
				if len(keys) > 0 || strings.Contains(f.Contents, "PRIVATE KEY") {
					if !f.Sensitive || f.Mode != "0600" {
						t.Errorf("%s holds the key of %v: sensitive %v, mode %s; want sensitive, 0600", f.Path, keys, f.Sensitive, f.Mode)
					}
				}
				if f.Sensitive && f.Mode != "0600" {
					t.Errorf("%s is sensitive, mode %s: want 0600", f.Path, f.Mode)
				}
				if !f.Sensitive && f.Mode != "0644" {
					t.Errorf("%s: mode %s, want 0644 for what holds no key", f.Path, f.Mode)
				}
				if strings.Contains(f.Contents, model.PendingPEM) {
					t.Errorf("%s: after the apply, it still holds %q", f.Path, model.PendingPEM)
				}
			}
			// No CA's key in any form, anywhere in the object.
			for _, ca := range cas {
				if holdsKey(obj, ks[ca]) {
					t.Errorf("the node configuration holds the key of %s", ca)
				}
			}

			if ig.Spec.Role == model.RoleNode {
				want := []string{c.Spec.Kubelet.ClientCAFile, c.Spec.KubeProxy.Kubeconfig, c.Spec.Kubelet.BootstrapKubeconfig}
				if diff := slices.Sorted(maps.Keys(files)); !slices.Equal(diff, slices.Sorted(slices.Values(want))) {
					t.Errorf("a worker's files: %v, want only %v", diff, want)
				}
				if got := files[c.Spec.Kubelet.ClientCAFile].Contents; got != ks[model.KeypairKubernetesCA].CertPEM {
					t.Errorf("%s is not the Kubernetes CA's certificate", c.Spec.Kubelet.ClientCAFile)
				}
				// The bootstrap token asks for a certificate of a new node's name only (docs/pki.md); the kubelet CA's
				// key is the control plane's.
				if got := keyNames(obj, ks); !slices.Equal(got, []string{model.KeypairBootstrapToken, model.KeypairKubeProxy}) {
					t.Errorf("a worker's configuration holds the keys of %v, want the bootstrap token's and kube-proxy's only", got)
				}
				if nc.Protokube != nil {
					t.Error("a worker's configuration holds protokube's")
				}
				return
			}

			// The control plane: every member's peer and server pair, wherever the member runs.
			for _, e := range c.Spec.EtcdClusters {
				for _, m := range e.Members {
					p := model.EtcdMemberPKI(e.Name, m.Name)
					for _, pair := range []struct{ cert, key, keypair string }{
						{p.PeerCert, p.PeerKey, model.EtcdPeerKeypair(e.Name, m.Name)},
						{p.ServerCert, p.ServerKey, model.EtcdServerKeypair(e.Name, m.Name)},
					} {
						is := ks[pair.keypair]
						if files[pair.cert].Contents != is.CertPEM || files[pair.key].Contents != is.KeyPEM.Reveal() {
							t.Errorf("%s: %s and %s are not its certificate and key", pair.keypair, pair.cert, pair.key)
						}
					}
				}
			}
			// Every key but the CAs' and the admin's (an operator's, never a node's), and the kubelet CA's, with which
			// kube-controller-manager signs kubelets' certificates.
			var want []string
			for _, n := range slices.Sorted(maps.Keys(ks)) {
				if !slices.Contains(cas, n) && n != model.KeypairAdmin {
					want = append(want, n)
				}
			}
			if got := keyNames(obj, ks); !slices.Equal(got, want) {
				t.Errorf("the control plane's configuration holds the keys of\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// TestRedactNodeConfigObject: what a plan shows of a stored node configuration holds no key in any form, and
// every certificate.
func TestRedactNodeConfigObject(t *testing.T) {
	c, _, _, store := appliedCluster(t, 1)
	ks := storedKeystore(t, store, c.Metadata.Name)
	for _, ig := range []string{"control-plane-a", "nodes"} {
		t.Run(ig, func(t *testing.T) {
			nc, obj := storedNodeConfig(t, store, c.Metadata.Name, ig)
			shown, err := model.RedactNodeConfigObject(obj)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(shown, "PRIVATE KEY") || strings.Contains(shown, base64.StdEncoding.EncodeToString([]byte("-----BEGIN PRIVATE KE"))) {
				t.Error("the redacted configuration holds a private key's PEM")
			}
			if got := keyNames(shown, ks); len(got) > 0 {
				t.Errorf("the redacted configuration holds the keys of %v", got)
			}
			if first := strings.SplitN(obj, "\n", 2)[0]; !strings.HasPrefix(shown, first+"\n") {
				t.Error("the redacted configuration lost its first line, the sha256 a reviewer compares")
			}
			// It still reads as a node configuration (its sha256 no longer matches: it is for showing only).
			var back model.NodeConfig
			if err := yaml.Unmarshal([]byte(strings.SplitN(shown, "\n", 2)[1]), &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Files) != len(nc.Files) {
				t.Fatalf("%d files shown, %d stored", len(back.Files), len(nc.Files))
			}
			for i, f := range nc.Files {
				b := back.Files[i]
				switch {
				case f.Sensitive && (b.Contents != engine.Redacted || !b.Sensitive):
					t.Errorf("%s: not shown as %s", f.Path, engine.Redacted) // never print what it shows: a key
				case !f.Sensitive && b.Contents != f.Contents:
					t.Errorf("%s: a certificate is not shown as it is", f.Path)
				}
				if b.Path != f.Path || b.Mode != f.Mode {
					t.Errorf("%s %s shown as %s %s", f.Path, f.Mode, b.Path, b.Mode)
				}
			}
		})
	}
	for _, junk := range []string{"", "hunter2 secret-7c1d", "# sha256:00\nhunter2: [secret-7c1d"} {
		if _, err := model.RedactNodeConfigObject(junk); err == nil {
			t.Errorf("RedactNodeConfigObject(%q) accepted it", junk)
		} else if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "secret-7c1d") {
			t.Errorf("the error quotes the object: %v", err)
		}
	}
}

// flagMap turns --name=value flags into a map.
func flagMap(flags []string) map[string]string {
	m := map[string]string{}
	for _, f := range flags {
		name, v, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		m[name] = v
	}
	return m
}

func parseCert(t *testing.T, what, data string) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(data))
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("%s: not a certificate", what)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return c
}

// kubeconfigFile is what the tests read of a kubeconfig.
type kubeconfigFile struct {
	Clusters []struct {
		Cluster struct {
			Server string `json:"server"`
			CAData string `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			CertData string `json:"client-certificate-data"`
			KeyData  string `json:"client-key-data"`
			Token    string `json:"token"`
		} `json:"user"`
	} `json:"users"`
}

// TestKeystoreFilesWorkTogether reads the files of a control-plane node and of a worker as the components' flags
// name them, and checks that each TLS connection of the control plane would be made: every certificate is its
// key's, verifies against the CA file its peer trusts, for the name the peer dials and the usage it needs.
func TestKeystoreFilesWorkTogether(t *testing.T) {
	c, _, _, store := appliedCluster(t, 3)
	name := c.Metadata.Name
	nc, _ := storedNodeConfig(t, store, name, "control-plane-b")
	worker, _ := storedNodeConfig(t, store, name, "nodes")
	files := filesByPath(nc)
	for p, f := range filesByPath(worker) {
		// The bootstrap kubeconfig differs by its server alone (the control plane's kubelet bootstraps through
		// 127.0.0.1): TestBootstrapKubeconfig.
		if cp, ok := files[p]; ok && cp.Contents != f.Contents && p != c.Spec.Kubelet.BootstrapKubeconfig {
			t.Errorf("%s differs between a worker and the control plane", p)
		}
		files[p] = f
	}
	read := func(p string) string {
		t.Helper()
		f, ok := files[p]
		if !ok {
			t.Fatalf("no node file %s", p)
		}
		return f.Contents
	}

	api := flagMap(model.Flags(c.Spec.KubeAPIServer))
	kcm := flagMap(model.Flags(c.Spec.KubeControllerManager))
	kubelet := flagMap(model.Flags(c.Spec.Kubelet))
	var etcd map[string]string
	for _, ec := range nc.Protokube.EtcdClusters {
		if ec.Name == "main" {
			pod := nodegraph.EtcdPod(nc.Protokube, ec, ec.Members[1], "/mnt/data", false)
			etcd = flagMap(pod.Spec.Containers[0].Args)
		}
	}

	// Every certificate and key a flag names belong together.
	for _, pair := range []struct {
		flags      map[string]string
		cert, key  string
		component  string
		commonName string
	}{
		{api, "tls-cert-file", "tls-private-key-file", "kube-apiserver", "kube-apiserver"},
		{api, "etcd-certfile", "etcd-keyfile", "kube-apiserver", "kube-apiserver"},
		{api, "kubelet-client-certificate", "kubelet-client-key", "kube-apiserver", "kube-apiserver-kubelet-client"},
		{api, "proxy-client-cert-file", "proxy-client-key-file", "kube-apiserver", "front-proxy-client"},
		{etcd, "cert-file", "key-file", "etcd", "b.etcd-main.internal." + name},
		{etcd, "peer-cert-file", "peer-key-file", "etcd", "b.etcd-main.internal." + name},
	} {
		cert, key := read(pair.flags[pair.cert]), read(pair.flags[pair.key])
		if _, err := tls.X509KeyPair([]byte(cert), []byte(key)); err != nil {
			t.Errorf("%s --%s and --%s: %v", pair.component, pair.cert, pair.key, err)
		}
		if cn := parseCert(t, pair.cert, cert).Subject.CommonName; cn != pair.commonName {
			t.Errorf("%s --%s: CN %s, want %s", pair.component, pair.cert, cn, pair.commonName)
		}
	}

	serviceIP, _ := model.NthAddress(c.Spec.Networking.ServiceClusterIPRange, 1)
	for _, tt := range []struct {
		name   string
		cert   string // the file presented
		roots  string // the CA file of who checks it
		dial   string // the name or address the checker dialled; "" for a client certificate
		usages []x509.ExtKeyUsage
	}{
		{"kube-apiserver to etcd: etcd's serving certificate", etcd["cert-file"], api["etcd-cafile"], "127.0.0.1", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"kube-apiserver to etcd: its client certificate", api["etcd-certfile"], etcd["trusted-ca-file"], "", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"etcd to a peer: serving", etcd["peer-cert-file"], etcd["peer-trusted-ca-file"], "b.etcd-main.internal." + name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"etcd to a peer: as a client", etcd["peer-cert-file"], etcd["peer-trusted-ca-file"], "", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"a client to kube-apiserver by its public name", api["tls-cert-file"], api["client-ca-file"], c.Spec.API.PublicName, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"a node to kube-apiserver by its internal name", api["tls-cert-file"], kubelet["client-ca-file"], c.Spec.API.InternalName, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"a pod to kube-apiserver by its service", api["tls-cert-file"], kcm["root-ca-file"], "kubernetes.default.svc." + c.Spec.Networking.ClusterDomain, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"a pod to kube-apiserver by its service IP", api["tls-cert-file"], kcm["root-ca-file"], serviceIP, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"the controller-manager to kube-apiserver on its node", api["tls-cert-file"], api["client-ca-file"], "127.0.0.1", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"kube-apiserver to a kubelet: its client certificate", api["kubelet-client-certificate"], kubelet["client-ca-file"], "", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"kube-apiserver to an aggregated API: the front proxy's certificate", api["proxy-client-cert-file"], api["requestheader-client-ca-file"], "", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cert := parseCert(t, tt.cert, read(tt.cert))
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM([]byte(read(tt.roots))) {
				t.Fatalf("%s holds no certificate", tt.roots)
			}
			opts := x509.VerifyOptions{Roots: roots, KeyUsages: tt.usages}
			if _, err := cert.Verify(opts); err != nil {
				t.Errorf("%s does not verify against %s: %v", tt.cert, tt.roots, err)
			}
			if tt.dial != "" {
				if err := cert.VerifyHostname(tt.dial); err != nil {
					t.Errorf("%s: %v", tt.cert, err)
				}
			}
			if parseCert(t, tt.roots, read(tt.roots)).IsCA != true {
				t.Errorf("%s is not a CA", tt.roots)
			}
		})
	}
	if cn := parseCert(t, "proxy", read(api["proxy-client-cert-file"])).Subject.CommonName; cn != api["requestheader-allowed-names"] {
		t.Errorf("the front proxy's certificate is CN %s; kube-apiserver allows %s", cn, api["requestheader-allowed-names"])
	}
	// etcd's clients and peers are told apart: a peer certificate is no client certificate of etcd's clients CA.
	if read(etcd["trusted-ca-file"]) == read(etcd["peer-trusted-ca-file"]) {
		t.Error("etcd trusts one CA for its peers and its clients")
	}

	// The service-account key pair: kube-apiserver verifies what it and the controller-manager sign.
	pub := read(api["service-account-key-file"])
	for _, f := range []string{api["service-account-signing-key-file"], kcm["service-account-private-key-file"]} {
		is, err := pkitasks.Decode([]byte(read(f)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got, _ := is.PublicKeyPEM(); got != pub {
			t.Errorf("%s is not the private half of %s", f, api["service-account-key-file"])
		}
	}

	// The kubeconfigs: the Kubernetes CA, a client certificate it signed with its key, the server to dial.
	for _, tt := range []struct {
		path, server, user, commonName string
	}{
		{c.Spec.KubeControllerManager.Kubeconfig, "https://127.0.0.1", model.KeypairKubeControllerManager, "system:kube-controller-manager"},
		{c.Spec.KubeScheduler.Kubeconfig, "https://127.0.0.1", model.KeypairKubeScheduler, "system:kube-scheduler"},
		{c.Spec.KubeProxy.Kubeconfig, "https://" + c.Spec.API.InternalName, model.KeypairKubeProxy, "system:kube-proxy"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			var kc kubeconfigFile
			if err := yaml.Unmarshal([]byte(read(tt.path)), &kc); err != nil {
				t.Fatal(err)
			}
			if len(kc.Clusters) != 1 || len(kc.Users) != 1 {
				t.Fatalf("%d clusters, %d users", len(kc.Clusters), len(kc.Users))
			}
			decode := func(s string) string {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			ca, cert, key := decode(kc.Clusters[0].Cluster.CAData), decode(kc.Users[0].User.CertData), decode(kc.Users[0].User.KeyData)
			if kc.Clusters[0].Cluster.Server != tt.server || kc.Users[0].Name != tt.user {
				t.Errorf("server %s, user %s; want %s, %s", kc.Clusters[0].Cluster.Server, kc.Users[0].Name, tt.server, tt.user)
			}
			if ca != read(kubelet["client-ca-file"]) {
				t.Error("the kubeconfig does not trust the Kubernetes CA")
			}
			if _, err := tls.X509KeyPair([]byte(cert), []byte(key)); err != nil {
				t.Errorf("its certificate and key: %v", err)
			}
			crt := parseCert(t, tt.path, cert)
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM([]byte(read(api["client-ca-file"])))
			if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("kube-apiserver would refuse its certificate: %v", err)
			}
			if crt.Subject.CommonName != tt.commonName {
				t.Errorf("CN %s, want %s", crt.Subject.CommonName, tt.commonName)
			}
		})
	}
}

// TestKeystoreSentinel runs the local cloud graph of a complete spec, apply then dry runs, and searches every
// private key the keystore holds in all that the runs printed: the plans as text and JSON, the logs and the
// progress. None is there, in any form. A change of the service range issues kube-apiserver's certificate again,
// says why, and shows neither its old key nor its new one.
func TestKeystoreSentinel(t *testing.T) {
	c, igs := model.CompleteSpec(t, model.CloudLocal, 3)
	if err := model.Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	cloud, store := localCloud(t, c)
	// What logs to the default logger rather than the run's is searched too.
	var defaultLogs bytes.Buffer
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&defaultLogs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(saved) })

	var runs []cloudRun
	first := runCloudGraph(t, c, igs, cloud, engine.DryRun)
	applied := runCloudGraph(t, c, igs, cloud, engine.Apply)
	// The apply makes the changes the dry run announced; only what is shown of the node configurations differs,
	// the dry run's holding PendingPEM for every certificate.
	if a, b := changeKeys(first.plan), changeKeys(applied.plan); !slices.Equal(a, b) {
		t.Errorf("the apply made\n%v\nthe dry run announced\n%v", b, a)
	}
	if !strings.Contains(first.json, model.PendingPEM) || strings.Contains(applied.json, model.PendingPEM) {
		t.Errorf("the first dry run does not show the certificates still to be issued as %q, or the apply does", model.PendingPEM)
	}
	runs = append(runs, first, applied)
	for i := range 2 {
		again := runCloudGraph(t, c, igs, cloud, engine.DryRun)
		if !again.plan.Empty() {
			t.Errorf("dry run %d after the apply plans changes:\n%s", i+1, again.text)
		}
		runs = append(runs, again)
	}
	before := storedKeystore(t, store, c.Metadata.Name)

	// A new service range: kube-apiserver's certificate names a new service IP.
	u, uigs := model.UserSpec(t, model.CloudLocal, 3)
	u.Spec.Networking = &model.NetworkingSpec{ServiceClusterIPRange: "100.65.0.0/16"}
	c2, igs2 := model.Complete(u, uigs)
	if err := model.Validate("test", c2, igs2); err != nil {
		t.Fatal(err)
	}
	planned := runCloudGraph(t, c2, igs2, cloud, engine.DryRun)
	var keypairs []string
	for _, ch := range planned.plan.Changes {
		if ch.Key.Type == "Keypair" {
			keypairs = append(keypairs, ch.Key.Name)
		}
	}
	if !slices.Equal(keypairs, []string{model.KeypairKubeAPIServer}) {
		t.Errorf("a new service range issues again %v, want kube-apiserver's certificate only:\n%s", keypairs, planned.text)
	}
	if want := "IPAddresses    [100.64.0.1, 127.0.0.1] -> [100.65.0.1, 127.0.0.1]"; !strings.Contains(planned.text, want) {
		t.Errorf("the dry run does not say %q:\n%s", want, planned.text)
	}
	// The node configurations of the dry run carry no certificate that is to be issued again: they show it
	// as still to be issued, so that the plan shows every configuration the apply will write.
	if !strings.Contains(planned.json, model.PendingPEM) {
		t.Errorf("the dry run's node configurations do not show kube-apiserver's new certificate as %q", model.PendingPEM)
	}
	reissued := runCloudGraph(t, c2, igs2, cloud, engine.Apply)
	if a, b := changeKeys(planned.plan), changeKeys(reissued.plan); !slices.Equal(a, b) {
		t.Errorf("the apply made\n%v\nthe dry run announced\n%v", b, a)
	}
	if after := runCloudGraph(t, c2, igs2, cloud, engine.DryRun); !after.plan.Empty() {
		t.Errorf("the dry run after the new issue plans changes:\n%s", after.text)
	} else {
		runs = append(runs, after)
	}
	runs = append(runs, planned, reissued)
	after := storedKeystore(t, store, c.Metadata.Name)
	if before[model.KeypairKubeAPIServer].KeyPEM.Reveal() == after[model.KeypairKubeAPIServer].KeyPEM.Reveal() {
		t.Error("kube-apiserver's key was not issued again")
	}
	for n, is := range after {
		if n != model.KeypairKubeAPIServer && is.KeyPEM.Reveal() != before[n].KeyPEM.Reveal() {
			t.Errorf("%s was issued again", n)
		}
	}

	keys := map[string]*pkitasks.Issued{}
	for n, is := range before {
		keys[n] = is
	}
	keys["kube-apiserver (new)"] = after[model.KeypairKubeAPIServer]
	if len(keys) != 30 {
		t.Fatalf("%d keys to look for, want 30", len(keys))
	}
	runs = append(runs, cloudRun{logs: defaultLogs.String()})
	armour := base64.StdEncoding.EncodeToString([]byte("-----BEGIN PRIVATE KE")) // 21 bytes: no padding
	for i, r := range runs {
		for what, out := range map[string]string{"plan": r.text, "JSON plan": r.json, "logs": r.logs} {
			if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, armour) {
				t.Errorf("run %d: the %s holds a private key's PEM", i, what)
			}
			for n, is := range keys {
				if holdsKey(out, is) {
					t.Errorf("run %d: the %s holds the key of %s", i, what, n)
				}
			}
		}
	}
	// The search finds what it looks for: the stored node configurations hold keys in both forms.
	nc, obj := storedNodeConfig(t, store, c.Metadata.Name, "control-plane-a")
	if !strings.Contains(obj, "PRIVATE KEY") || !strings.Contains(obj, armour) || !holdsKey(obj, keys[model.KeypairKubeProxy]) || len(nc.Files) == 0 {
		t.Fatal("the sentinel search would not find a key: the test is broken")
	}
}

// changeKeys lists a plan's changes as "action key".
func changeKeys(p *engine.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		out = append(out, string(c.Action)+" "+c.Key.String())
	}
	return out
}

// TestNodeGraphWritesKeystoreFiles runs nodeup's graph of a stored node configuration on a node in a temporary
// directory: each file of the keystore is written with its contents and mode, a second run changes nothing, and
// no plan or log shows a key.
func TestNodeGraphWritesKeystoreFiles(t *testing.T) {
	c, _, _, store := appliedCluster(t, 1)
	ks := storedKeystore(t, store, c.Metadata.Name)
	for _, ig := range []string{"control-plane-a", "nodes"} {
		t.Run(ig, func(t *testing.T) {
			nc, _ := storedNodeConfig(t, store, c.Metadata.Name, ig)
			ctx := context.Background()
			root := t.TempDir()
			node, err := nodetasks.NewNode(ctx, root, nodetasks.NodeOptions{Systemd: nodetasks.SystemdNone})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { node.Close() })
			var logs bytes.Buffer
			run := func(target engine.Target) (*engine.Plan, string) {
				t.Helper()
				g, err := nodegraph.BuildNodeGraph(nc)
				if err != nil {
					t.Fatal(err)
				}
				res, err := engine.Run(ctx, g, node, engine.Options{Target: target,
					Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
				if err != nil {
					t.Fatalf("%s: %v", target, err)
				}
				var text, js bytes.Buffer
				if err := res.Plan.WriteText(&text); err != nil {
					t.Fatal(err)
				}
				if err := res.Plan.WriteJSON(&js); err != nil {
					t.Fatal(err)
				}
				return res.Plan, text.String() + js.String()
			}
			var outs []string
			_, out := run(engine.DryRun)
			outs = append(outs, out)
			if os.Getuid() == 0 { // the files are owned by root: only root can make them so
				_, out = run(engine.Apply)
				outs = append(outs, out)
				again, out := run(engine.DryRun)
				if !again.Empty() {
					t.Errorf("the dry run after the apply plans changes:\n%s", out)
				}
				outs = append(outs, out)
				for _, f := range nc.Files {
					p := filepath.Join(root, f.Path)
					b, err := os.ReadFile(p)
					if err != nil || string(b) != f.Contents {
						t.Errorf("%s: not written as the configuration says (%v)", f.Path, err)
						continue
					}
					st, err := os.Stat(p)
					if mode, _ := f.FileMode(); err != nil || uint32(st.Mode().Perm()) != mode {
						t.Errorf("%s: mode %v, want %s", f.Path, st.Mode().Perm(), f.Mode)
					}
				}
			} else {
				t.Log("not root: the files kubeup writes are owned by root; only the dry run ran")
			}
			for i, out := range append(outs, logs.String()) {
				if strings.Contains(out, "PRIVATE KEY") {
					t.Errorf("output %d holds a private key's PEM", i)
				}
				if got := keyNames(out, ks); len(got) > 0 {
					t.Errorf("output %d holds the keys of %v", i, got)
				}
			}
		})
	}
}

// TestBootstrapKubeconfig: every role's kubelet gets a bootstrap kubeconfig holding the keystore's bootstrap
// token and trusting the Kubernetes CA; a worker's reaches the API by its internal name, the control plane's its
// own node's kube-apiserver. kubelet's flags name it, with rotation of both certificates.
func TestBootstrapKubeconfig(t *testing.T) {
	c, _, _, store := appliedCluster(t, 1)
	ks := storedKeystore(t, store, c.Metadata.Name)
	for ig, server := range map[string]string{"nodes": "https://" + c.Spec.API.InternalName, "control-plane-a": "https://127.0.0.1"} {
		nc, _ := storedNodeConfig(t, store, c.Metadata.Name, ig)
		f, ok := filesByPath(nc)[c.Spec.Kubelet.BootstrapKubeconfig]
		if !ok || !f.Sensitive || f.Mode != "0600" {
			t.Fatalf("%s: bootstrap kubeconfig %+v", ig, f)
		}
		var kc kubeconfigFile
		if err := yaml.Unmarshal([]byte(f.Contents), &kc); err != nil {
			t.Fatal(err)
		}
		ca, _ := base64.StdEncoding.DecodeString(kc.Clusters[0].Cluster.CAData)
		if kc.Clusters[0].Cluster.Server != server || string(ca) != ks[model.KeypairKubernetesCA].CertPEM {
			t.Errorf("%s: server %s (want %s), or the CA is not the Kubernetes CA", ig, kc.Clusters[0].Cluster.Server, server)
		}
		if u := kc.Users[0].User; u.CertData != "" || u.KeyData != "" || u.Token != ks[model.KeypairBootstrapToken].Token.Reveal() {
			t.Errorf("%s: the user is not the bootstrap token alone", ig)
		}
	}
	flags := flagMap(model.Flags(c.Spec.Kubelet))
	for flag, want := range map[string]string{"bootstrap-kubeconfig": c.Spec.Kubelet.BootstrapKubeconfig, "kubeconfig": "/var/lib/kubelet/kubeconfig",
		"cert-dir": "/var/lib/kubelet/pki", "rotate-certificates": "true", "rotate-server-certificates": "true"} {
		if flags[flag] != want {
			t.Errorf("kubelet --%s=%s, want %s", flag, flags[flag], want)
		}
	}
}
