package kubetasks

import (
	"context"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The signers of kubelets' certificates, whose requests the approver decides (kube-controller-manager signs
// what is approved).
const (
	SignerKubeletClient  = "kubernetes.io/kube-apiserver-client-kubelet"
	SignerKubeletServing = "kubernetes.io/kubelet-serving"
)

// Subjects of kubelets and of the bootstrap token.
const (
	NodeUserPrefix      = "system:node:"
	NodesGroup          = "system:nodes"
	BootstrapUserPrefix = "system:bootstrap:"
)

// CSR is a CertificateSigningRequest as the approver reads it.
type CSR struct {
	Name       string
	SignerName string
	// Username and Groups are who made the request (set by kube-apiserver, not by the requester).
	Username string
	Groups   []string
	Usages   []string
	// Request is the PKCS #10 request in PEM.
	Request []byte
	Created time.Time
	// Approved and Denied are its conditions.
	Approved, Denied bool
	// Annotations are the CSR object's annotations, where a proof of the machine's identity may travel.
	Annotations map[string]string
}

// NodeAddress is one address of a Node's status.
type NodeAddress struct {
	Type, Address string
}

// IdentityProof checks that the machine asking to bootstrap as a node is the machine that node's name belongs
// to: a signed instance identity document on aws, an instance identity token on gce (a later issue). nil is no
// proof: a bootstrap request is then approved on the shared bootstrap token and the name being new alone.
type IdentityProof interface {
	// Verify returns nil when csr proves that its requester is the machine named node; else why not.
	Verify(ctx context.Context, csr *CSR, node string) error
}

// Approver decides kubelets' certificate requests (docs/pki.md has the table).
type Approver struct {
	// TokenID is the id of kubeup's bootstrap token: its requests come from system:bootstrap:<TokenID>.
	TokenID string
	// Reserved are DNS names no kubelet's serving certificate may carry (the API's names, localhost).
	Reserved []string
	// Proof checks a bootstrap request's machine; nil: none (the gap `kubeup validate cluster` names on clouds).
	Proof IdentityProof
}

// Decision is what the approver does with one request, and why.
type Decision struct {
	CSR     string
	Approve bool
	Reason  string
}

func (d Decision) String() string {
	verb := "deny"
	if d.Approve {
		verb = "approve"
	}
	return d.CSR + ": " + verb + ": " + d.Reason
}

// nodeName is a Node's name: a DNS subdomain (RFC 1123), at most 253 characters.
var nodeName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Decide decides csr, an undecided request of a kubelet signer, knowing the Nodes (by name, their status
// addresses) and every other request (to approve one bootstrap per name only). It never approves what it does
// not understand: every refusal says why.
func (a *Approver) Decide(ctx context.Context, csr *CSR, nodes map[string][]NodeAddress, all []*CSR) Decision {
	deny := func(format string, args ...any) Decision {
		return Decision{CSR: csr.Name, Reason: fmt.Sprintf(format, args...)}
	}
	req, node, problem := parseNodeRequest(csr.Request)
	if problem != "" {
		return deny("%s", problem)
	}
	isNode := csr.Username == NodeUserPrefix+node && slices.Contains(csr.Groups, NodesGroup)
	switch csr.SignerName {
	case SignerKubeletClient:
		if p := usagesProblem(csr.Usages, "client auth"); p != "" {
			return deny("%s", p)
		}
		if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
			return deny("a kubelet's client certificate carries no subject alternative names; this request has some")
		}
		switch {
		case isNode:
			return Decision{CSR: csr.Name, Approve: true, Reason: "renewal by node " + node + " of its own certificate"}
		case strings.HasPrefix(csr.Username, NodeUserPrefix):
			return deny("%s may not ask for a certificate of another node's name (%s)", csr.Username, node)
		case a.TokenID == "" || csr.Username != BootstrapUserPrefix+a.TokenID:
			return deny("requested by %s, which is neither node %s nor kubeup's bootstrap token", csr.Username, node)
		}
		if _, exists := nodes[node]; exists {
			return deny("Node %s exists: a bootstrap token never obtains the name of a node that exists (the node renews its own certificate)", node)
		}
		for _, o := range all {
			if o.Name == csr.Name || o.SignerName != SignerKubeletClient || o.Denied {
				continue
			}
			if _, other, p := parseNodeRequest(o.Request); p != "" || other != node {
				continue
			}
			if o.Approved {
				return deny("request %s for %s%s was approved already: one bootstrap per node name", o.Name, NodeUserPrefix, node)
			}
			if o.Created.Before(csr.Created) || o.Created.Equal(csr.Created) && o.Name < csr.Name {
				return deny("request %s for %s%s came first: one bootstrap per node name", o.Name, NodeUserPrefix, node)
			}
		}
		if a.Proof == nil {
			return Decision{CSR: csr.Name, Approve: true, Reason: "bootstrap of new node " + node + " with kubeup's bootstrap token (no proof of the machine's identity)"}
		}
		if err := a.Proof.Verify(ctx, csr, node); err != nil {
			return deny("the machine's identity does not prove it is %s: %v", node, err)
		}
		return Decision{CSR: csr.Name, Approve: true, Reason: "bootstrap of new node " + node + ", its machine's identity proven"}

	case SignerKubeletServing:
		if p := usagesProblem(csr.Usages, "server auth"); p != "" {
			return deny("%s", p)
		}
		if !isNode {
			return deny("requested by %s: only node %s asks for its serving certificate", csr.Username, node)
		}
		addrs, exists := nodes[node]
		if !exists {
			return deny("Node %s does not exist: its serving certificate names the addresses of its status", node)
		}
		if len(req.EmailAddresses)+len(req.URIs) > 0 {
			return deny("a kubelet's serving certificate carries DNS names and IP addresses only; this request has e-mail addresses or URIs")
		}
		if len(req.DNSNames)+len(req.IPAddresses) == 0 {
			return deny("a kubelet's serving certificate names at least one of the node's addresses; this request names none")
		}
		for _, n := range req.DNSNames {
			switch {
			case slices.Contains(a.Reserved, strings.ToLower(n)) || strings.EqualFold(n, "localhost"):
				return deny("DNS name %s is reserved (the API's, or localhost)", n)
			case !hasAddress(addrs, n, "Hostname", "InternalDNS", "ExternalDNS"):
				return deny("DNS name %s is not one of Node %s's addresses", n, node)
			}
		}
		for _, ip := range req.IPAddresses {
			switch {
			case ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() || ip.IsMulticast():
				return deny("IP address %s is loopback, unspecified, link-local or multicast", ip)
			case !hasAddress(addrs, ip.String(), "InternalIP", "ExternalIP"):
				return deny("IP address %s is not one of Node %s's addresses", ip, node)
			}
			for other, oa := range nodes {
				if other != node && hasAddress(oa, ip.String(), "InternalIP", "ExternalIP") {
					return deny("IP address %s is also Node %s's", ip, other)
				}
			}
		}
		return Decision{CSR: csr.Name, Approve: true, Reason: "serving certificate of node " + node + " for addresses of its own"}
	}
	return deny("signer %s is not a kubelet's", csr.SignerName)
}

func hasAddress(addrs []NodeAddress, value string, types ...string) bool {
	for _, a := range addrs {
		if slices.Contains(types, a.Type) && (a.Address == value || net.ParseIP(a.Address) != nil && net.ParseIP(a.Address).Equal(net.ParseIP(value))) {
			return true
		}
	}
	return false
}

// usagesProblem checks a kubelet's usages: "digital signature", optionally "key encipherment" (RSA keys), and
// the one extended usage want; nothing else.
func usagesProblem(usages []string, want string) string {
	if !slices.Contains(usages, want) {
		return fmt.Sprintf("usages %v: a kubelet's certificate has %q", usages, want)
	}
	for _, u := range usages {
		if u != want && u != "digital signature" && u != "key encipherment" {
			return fmt.Sprintf("usage %q: a kubelet's certificate has only %q, \"digital signature\" and \"key encipherment\"", u, want)
		}
	}
	return ""
}

var (
	oidCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
)

// parseNodeRequest parses a kubelet's PKCS #10 request: its signature must verify, and its subject be exactly CN
// system:node:<name> and O system:nodes, name a valid Node name. problem says what is wrong.
func parseNodeRequest(pemBytes []byte) (req *x509.CertificateRequest, node, problem string) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return nil, "", "the request is not a PEM CERTIFICATE REQUEST"
	}
	req, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return nil, "", "the request does not parse: " + err.Error()
	}
	if err := req.CheckSignature(); err != nil {
		return nil, "", "the request's signature does not verify: " + err.Error()
	}
	s := req.Subject
	for _, n := range s.Names {
		if !n.Type.Equal(oidCommonName) && !n.Type.Equal(oidOrganization) {
			return nil, "", fmt.Sprintf("subject %q: a kubelet's subject is CN %s<node> and O %s, nothing else", s, NodeUserPrefix, NodesGroup)
		}
	}
	if len(s.Organization) != 1 || s.Organization[0] != NodesGroup {
		return nil, "", fmt.Sprintf("organization %q: a kubelet's is exactly [%s]", s.Organization, NodesGroup)
	}
	node, ok := strings.CutPrefix(s.CommonName, NodeUserPrefix)
	if !ok || len(node) > 253 || !nodeName.MatchString(node) {
		return nil, "", fmt.Sprintf("common name %q is not %s<a node name>", s.CommonName, NodeUserPrefix)
	}
	return req, node, ""
}
