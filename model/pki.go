package model

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/pkitasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// The cluster's keystore: its CAs, its service-account key and the certificates its components use, each a
// pkitasks.Keypair of the cloud graph, kept in the state store at <cluster>/pki/<name> (docs/pki.md).

// Names of the keystore's keypairs.
const (
	KeypairKubernetesCA   = "kubernetes-ca"   // signs kube-apiserver's serving certificate and every client of the API
	KeypairEtcdPeersCA    = "etcd-peers-ca"   // signs the etcd members' peer certificates
	KeypairEtcdClientsCA  = "etcd-clients-ca" // signs the etcd members' serving certificates and their clients'
	KeypairFrontProxyCA   = "front-proxy-ca"  // signs the front proxy's client certificate (API aggregation)
	KeypairServiceAccount = "service-account" // signs and verifies service-account tokens: a bare key
	KeypairKubeletCA      = "kubelet-ca"      // signs kubelets' client and serving certificates (kube-controller-manager)
	KeypairBootstrapToken = "bootstrap-token" // kubelets ask for their certificates with it: a token

	KeypairKubeAPIServer         = "kube-apiserver"
	KeypairKubeletAPIClient      = "kube-apiserver-kubelet-client"
	KeypairEtcdAPIClient         = "kube-apiserver-etcd-client"
	KeypairFrontProxyClient      = "front-proxy-client"
	KeypairKubeControllerManager = "kube-controller-manager"
	KeypairKubeScheduler         = "kube-scheduler"
	KeypairKubeProxy             = "kube-proxy"
	KeypairAdmin                 = "admin"
	KeypairProtokube             = "protokube"    // applies kubeup's objects in the cluster (RBAC, the bootstrap token)
	KeypairCSRApprover           = "csr-approver" // decides kubelets' certificate requests, in protokube
)

// Subjects of protokube's client certificates. The approver's identity holds only the RBAC kubeup gives it
// (ClusterRole kubeup:csr-approver); protokube's applies RBAC objects, which needs every permission they grant:
// system:masters, as the control plane's kube-apiserver-kubelet-client already is.
const (
	ProtokubeUser   = "kubeup:protokube"
	CSRApproverUser = "kubeup:csr-approver"
)

// Lifetimes of what kubeup issues. A certificate is issued again within pkitasks.RenewBefore (30 days) of its
// end by the next `kubeup update cluster --yes`; a CA never is.
const (
	CALifetime   = 10 * 365 * 24 * time.Hour
	CertLifetime = 365 * 24 * time.Hour
)

// AdminUser and AdminGroup are the subject of admin certificates: system:masters is bound to cluster-admin by
// every Kubernetes version, with no RBAC object that could be missing or changed.
const (
	AdminUser  = "kubeup-admin"
	AdminGroup = "system:masters"
)

// KeystoreDir is the cluster's keystore in the state store.
func KeystoreDir(cluster string) string { return path.Join(cluster, "pki") }

// KeypairPath is a keypair's object in the state store.
func KeypairPath(cluster, name string) string { return path.Join(KeystoreDir(cluster), name) }

// EtcdPeerKeypair and EtcdServerKeypair name the certificates of member m of etcd cluster e.
func EtcdPeerKeypair(e, m string) string   { return "etcd-" + e + "-" + m + "-peer" }
func EtcdServerKeypair(e, m string) string { return "etcd-" + e + "-" + m + "-server" }

// EtcdMemberDNSName is the DNS name of member m of etcd cluster e: <m>.etcd-<e>.internal.<cluster>, which
// protokube points at the node that holds the member's volume, and which its certificates name.
func EtcdMemberDNSName(cluster, e, m string) string { return m + ".etcd-" + e + ".internal." + cluster }

// keystore is the keypair tasks of one cloud graph, by name.
type keystore[C storetasks.World] map[string]*pkitasks.Keypair[C]

// addKeystore adds every keypair of a complete spec to g.
func addKeystore[C storetasks.World](g *engine.Graph[C], c *Cluster) (keystore[C], error) {
	name, s := c.Metadata.Name, &c.Spec
	dir := KeystoreDir(name)
	ks := keystore[C]{}
	add := func(k *pkitasks.Keypair[C]) *pkitasks.Keypair[C] {
		k.Dir, k.Status = dir, pkitasks.Valid
		slices.Sort(k.DNSNames)
		slices.Sort(k.IPAddresses)
		if k.Usage == pkitasks.UsageCA {
			k.Lifetime = CALifetime
		} else if k.Usage != pkitasks.UsageKey && k.Usage != pkitasks.UsageToken {
			k.Lifetime = CertLifetime
		}
		k = engine.Add(g, k)
		ks[k.Name] = k
		return k
	}
	ca := func(n string) *pkitasks.Keypair[C] {
		return add(&pkitasks.Keypair[C]{Name: n, CommonName: n, Usage: pkitasks.UsageCA})
	}
	kubeCA, peersCA, clientsCA, proxyCA := ca(KeypairKubernetesCA), ca(KeypairEtcdPeersCA), ca(KeypairEtcdClientsCA), ca(KeypairFrontProxyCA)
	add(&pkitasks.Keypair[C]{Name: KeypairServiceAccount, Usage: pkitasks.UsageKey})
	ca(KeypairKubeletCA)
	add(&pkitasks.Keypair[C]{Name: KeypairBootstrapToken, Usage: pkitasks.UsageToken})

	serviceIP, ok := nthAddress(s.Networking.ServiceClusterIPRange, 1)
	if !ok {
		return nil, fmt.Errorf("cluster %s: spec.networking.serviceClusterIPRange %q has no first address", name, s.Networking.ServiceClusterIPRange)
	}
	domain := s.Networking.ClusterDomain
	add(&pkitasks.Keypair[C]{
		Name: KeypairKubeAPIServer, CommonName: KeypairKubeAPIServer, Usage: pkitasks.UsageServer, Signer: kubeCA,
		DNSNames: []string{
			s.API.PublicName, s.API.InternalName,
			"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + domain,
			"localhost",
		},
		IPAddresses: []string{serviceIP, "127.0.0.1"},
	})
	client := func(n, cn string, signer *pkitasks.Keypair[C], org ...string) {
		add(&pkitasks.Keypair[C]{Name: n, CommonName: cn, Organization: org, Usage: pkitasks.UsageClient, Signer: signer})
	}
	client(KeypairKubeletAPIClient, KeypairKubeletAPIClient, kubeCA, AdminGroup)
	client(KeypairEtcdAPIClient, "kube-apiserver", clientsCA)
	client(KeypairFrontProxyClient, KeypairFrontProxyClient, proxyCA)
	client(KeypairKubeControllerManager, "system:kube-controller-manager", kubeCA)
	client(KeypairKubeScheduler, "system:kube-scheduler", kubeCA)
	client(KeypairKubeProxy, "system:kube-proxy", kubeCA)
	client(KeypairAdmin, AdminUser, kubeCA, AdminGroup)
	client(KeypairProtokube, ProtokubeUser, kubeCA, AdminGroup)
	client(KeypairCSRApprover, CSRApproverUser, kubeCA)

	for _, e := range s.EtcdClusters {
		for _, m := range e.Members {
			dns := EtcdMemberDNSName(name, e.Name, m.Name)
			add(&pkitasks.Keypair[C]{
				Name: EtcdPeerKeypair(e.Name, m.Name), CommonName: dns, Usage: pkitasks.UsagePeer, Signer: peersCA,
				DNSNames: []string{dns},
			})
			// Server and client usages both, as kubeadm has it: etcd's gRPC gateway (its HTTP/JSON API) dials the
			// member's own client port presenting this certificate, which client-cert-auth then checks.
			add(&pkitasks.Keypair[C]{
				Name: EtcdServerKeypair(e.Name, m.Name), CommonName: dns, Usage: pkitasks.UsagePeer, Signer: clientsCA,
				DNSNames: []string{dns, "localhost"}, IPAddresses: []string{"127.0.0.1"},
			})
		}
	}
	return ks, nil
}

// tasks returns the keypairs, sorted by name: what a task that reads their outputs runs after.
func (ks keystore[C]) tasks() []engine.Task {
	out := make([]engine.Task, 0, len(ks))
	for _, n := range slices.Sorted(maps.Keys(ks)) {
		out = append(out, ks[n])
	}
	return out
}

// issued returns what the keystore holds now: the outputs of its tasks (nil for a keypair that is still to be
// issued, in a dry run).
func (ks keystore[C]) issued() Issued {
	out := Issued{}
	for n, k := range ks {
		out[n] = k.Issued
	}
	return out
}

// Issued is the keystore's keypairs as found or issued, by name; nil for one still to be issued (in a dry run).
type Issued map[string]*pkitasks.Issued
