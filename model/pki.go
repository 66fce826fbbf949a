package model

import (
	"path"
	"time"

	"kubeup.dev/kubeup/engine"
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

// Issued is the keystore's keypairs as found or issued, by name; nil for one still to be issued (in a dry run).
type Issued map[string]*IssuedKeypair

// IssuedKeypair is what the node configurations hold of one keypair of the keystore, in PEM: its certificate,
// its key and its public key (PendingPEM when it has none), or a bootstrap token.
type IssuedKeypair struct {
	CertPEM      string
	KeyPEM       engine.Secret
	PublicKeyPEM string
	Token        engine.Secret
}
