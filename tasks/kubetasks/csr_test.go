package kubetasks_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/tasks/kubetasks"
)

type csrOpts struct {
	cn    string
	org   []string
	ou    []string
	dns   []string
	ips   []string
	email []string
}

func request(t *testing.T, o csrOpts) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: o.cn, Organization: o.org, OrganizationalUnit: o.ou},
		DNSNames: o.dns, EmailAddresses: o.email}
	for _, ip := range o.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

type failingProof struct{}

func (failingProof) Verify(ctx context.Context, csr *kubetasks.CSR, node string) error {
	return errors.New("no signed instance identity")
}

// TestApproverDecisions is the approver's decision table: each row a request, whether it is approved, and the
// reason it gives (every refusal has one that names what is wrong).
func TestApproverDecisions(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	node := func(n string) csrOpts { return csrOpts{cn: "system:node:" + n, org: []string{"system:nodes"}} }
	bootstrap := "system:bootstrap:abcdef"
	nodes := map[string][]kubetasks.NodeAddress{
		"w1": {{"InternalIP", "10.0.0.11"}, {"Hostname", "w1"}, {"ExternalIP", "203.0.113.11"}},
		"w2": {{"InternalIP", "10.0.0.12"}, {"Hostname", "w2"}},
		// A node that wrote another's address into its own status (kubelet sets its own addresses).
		"w3": {{"InternalIP", "10.0.0.12"}, {"Hostname", "w3"}, {"Hostname", "api.internal.c.example.com"}, {"InternalIP", "127.0.0.1"}},
	}
	clientUsages := []string{"digital signature", "client auth"}
	servingUsages := []string{"digital signature", "key encipherment", "server auth"}
	type row struct {
		name     string
		csr      kubetasks.CSR
		opts     csrOpts
		others   []*kubetasks.CSR
		proof    kubetasks.IdentityProof
		approve  bool
		reasonIs string
	}
	client := func(user string, groups ...string) kubetasks.CSR {
		return kubetasks.CSR{Name: "csr-1", SignerName: kubetasks.SignerKubeletClient, Username: user, Groups: groups, Usages: clientUsages, Created: t0}
	}
	serving := func(user string) kubetasks.CSR {
		return kubetasks.CSR{Name: "csr-1", SignerName: kubetasks.SignerKubeletServing, Username: user, Groups: []string{"system:nodes", "system:authenticated"}, Usages: servingUsages, Created: t0}
	}
	withUsages := func(c kubetasks.CSR, u ...string) kubetasks.CSR { c.Usages = u; return c }
	earlier := func(t *testing.T, name string, approved bool, created time.Time, n string) *kubetasks.CSR {
		return &kubetasks.CSR{Name: name, SignerName: kubetasks.SignerKubeletClient, Username: bootstrap, Usages: clientUsages,
			Request: request(t, node(n)), Created: created, Approved: approved}
	}
	rows := []row{
		{name: "bootstrap of a new node", csr: client(bootstrap, "system:bootstrappers"), opts: node("w9"), approve: true, reasonIs: "bootstrap of new node w9 with kubeup's bootstrap token"},
		{name: "bootstrap for a node that exists", csr: client(bootstrap, "system:bootstrappers"), opts: node("w1"), reasonIs: "Node w1 exists"},
		{name: "bootstrap with another token", csr: client("system:bootstrap:zzzzzz", "system:bootstrappers"), opts: node("w9"), reasonIs: "neither node w9 nor kubeup's bootstrap token"},
		{name: "bootstrap with extra organization", csr: client(bootstrap), opts: csrOpts{cn: "system:node:w9", org: []string{"system:nodes", "system:masters"}}, reasonIs: "a kubelet's is exactly [system:nodes]"},
		{name: "bootstrap as system:masters", csr: client(bootstrap), opts: csrOpts{cn: "system:node:w9", org: []string{"system:masters"}}, reasonIs: "a kubelet's is exactly [system:nodes]"},
		{name: "bootstrap with an organizational unit", csr: client(bootstrap), opts: csrOpts{cn: "system:node:w9", org: []string{"system:nodes"}, ou: []string{"x"}}, reasonIs: "nothing else"},
		{name: "bootstrap with a SAN", csr: client(bootstrap), opts: csrOpts{cn: "system:node:w9", org: []string{"system:nodes"}, dns: []string{"w9"}}, reasonIs: "no subject alternative names"},
		{name: "bootstrap with server auth", csr: withUsages(client(bootstrap), "digital signature", "client auth", "server auth"), opts: node("w9"), reasonIs: `usage "server auth"`},
		{name: "bootstrap without client auth", csr: withUsages(client(bootstrap), "digital signature"), opts: node("w9"), reasonIs: `has "client auth"`},
		{name: "bootstrap of a name that is not a node name", csr: client(bootstrap), opts: csrOpts{cn: "system:node:W9/../x", org: []string{"system:nodes"}}, reasonIs: "is not system:node:<a node name>"},
		{name: "bootstrap for a name already approved", csr: client(bootstrap), opts: node("w9"), others: []*kubetasks.CSR{earlier(t, "csr-0", true, t0.Add(-time.Minute), "w9")}, reasonIs: "csr-0 for system:node:w9 was approved already"},
		{name: "bootstrap for a name an earlier request asks", csr: client(bootstrap), opts: node("w9"), others: []*kubetasks.CSR{earlier(t, "csr-0", false, t0.Add(-time.Minute), "w9")}, reasonIs: "csr-0 for system:node:w9 came first"},
		{name: "bootstrap before a later request for the name", csr: client(bootstrap), opts: node("w9"), others: []*kubetasks.CSR{earlier(t, "csr-2", false, t0.Add(time.Minute), "w9")}, approve: true, reasonIs: "bootstrap of new node w9"},
		{name: "bootstrap whose machine proof fails", csr: client(bootstrap), opts: node("w9"), proof: failingProof{}, reasonIs: "does not prove it is w9: no signed instance identity"},
		{name: "renewal by the node itself", csr: client("system:node:w1", "system:nodes", "system:authenticated"), opts: node("w1"), approve: true, reasonIs: "renewal by node w1"},
		{name: "a node asking for another node's name", csr: client("system:node:w1", "system:nodes"), opts: node("w2"), reasonIs: "system:node:w1 may not ask for a certificate of another node's name (w2)"},
		{name: "a node asking for a new name", csr: client("system:node:w1", "system:nodes"), opts: node("w9"), reasonIs: "another node's name (w9)"},
		{name: "a node's user without the nodes group", csr: client("system:node:w1"), opts: node("w1"), reasonIs: "another node's name (w1)"},
		{name: "a request that does not parse", csr: client(bootstrap), reasonIs: "not a PEM CERTIFICATE REQUEST"},

		{name: "serving for its own addresses", csr: serving("system:node:w1"), opts: csrOpts{cn: "system:node:w1", org: []string{"system:nodes"}, dns: []string{"w1"}, ips: []string{"10.0.0.11", "203.0.113.11"}}, approve: true, reasonIs: "serving certificate of node w1"},
		{name: "serving for another node's address", csr: serving("system:node:w1"), opts: csrOpts{cn: "system:node:w1", org: []string{"system:nodes"}, ips: []string{"10.0.0.12"}}, reasonIs: "10.0.0.12 is not one of Node w1's addresses"},
		{name: "serving for another node's name", csr: serving("system:node:w1"), opts: csrOpts{cn: "system:node:w2", org: []string{"system:nodes"}, dns: []string{"w2"}}, reasonIs: "only node w2 asks"},
		{name: "serving for an address another node also lists", csr: serving("system:node:w3"), opts: csrOpts{cn: "system:node:w3", org: []string{"system:nodes"}, ips: []string{"10.0.0.12"}}, reasonIs: "10.0.0.12 is also Node w2's"},
		{name: "serving for the API's name", csr: serving("system:node:w3"), opts: csrOpts{cn: "system:node:w3", org: []string{"system:nodes"}, dns: []string{"api.internal.c.example.com"}}, reasonIs: "is reserved"},
		{name: "serving for loopback", csr: serving("system:node:w3"), opts: csrOpts{cn: "system:node:w3", org: []string{"system:nodes"}, ips: []string{"127.0.0.1"}}, reasonIs: "loopback"},
		{name: "serving for localhost", csr: serving("system:node:w3"), opts: csrOpts{cn: "system:node:w3", org: []string{"system:nodes"}, dns: []string{"localhost"}}, reasonIs: "localhost is reserved"},
		{name: "serving with an e-mail address", csr: serving("system:node:w1"), opts: csrOpts{cn: "system:node:w1", org: []string{"system:nodes"}, dns: []string{"w1"}, email: []string{"a@b.c"}}, reasonIs: "e-mail addresses or URIs"},
		{name: "serving with no address", csr: serving("system:node:w1"), opts: node("w1"), reasonIs: "names none"},
		{name: "serving for a node that does not exist", csr: serving("system:node:w9"), opts: csrOpts{cn: "system:node:w9", org: []string{"system:nodes"}, dns: []string{"w9"}}, reasonIs: "Node w9 does not exist"},
		{name: "serving asked with the bootstrap token", csr: serving(bootstrap), opts: csrOpts{cn: "system:node:w1", org: []string{"system:nodes"}, dns: []string{"w1"}}, reasonIs: "requested by system:bootstrap:abcdef"},
		{name: "serving with client auth", csr: withUsages(serving("system:node:w1"), "digital signature", "server auth", "client auth"), opts: csrOpts{cn: "system:node:w1", org: []string{"system:nodes"}, dns: []string{"w1"}}, reasonIs: `usage "client auth"`},
		{name: "another signer", csr: kubetasks.CSR{Name: "csr-1", SignerName: "kubernetes.io/kube-apiserver-client", Username: "system:node:w1", Groups: []string{"system:nodes"}, Usages: clientUsages}, opts: node("w1"), reasonIs: "is not a kubelet's"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			a := &kubetasks.Approver{TokenID: "abcdef", Reserved: []string{"api.internal.c.example.com", "api.c.example.com"}, Proof: r.proof}
			c := r.csr
			if r.opts.cn != "" {
				c.Request = request(t, r.opts)
			}
			all := append([]*kubetasks.CSR{&c}, r.others...)
			d := a.Decide(context.Background(), &c, nodes, all)
			if d.Approve != r.approve || !strings.Contains(d.Reason, r.reasonIs) || d.CSR != "csr-1" {
				t.Errorf("decision %q (approve %t), want approve %t with a reason containing %q", d.Reason, d.Approve, r.approve, r.reasonIs)
			}
			if d.Reason == "" {
				t.Error("a decision without a reason")
			}
		})
	}
}

// TestApproverRefusesAForgedSignature: a request whose signature does not verify (its public key is not the
// one that signed it) is refused before anything else.
func TestApproverRefusesAForgedSignature(t *testing.T) {
	good := request(t, csrOpts{cn: "system:node:w9", org: []string{"system:nodes"}})
	b, _ := pem.Decode(good)
	var raw struct {
		Info asn1.RawValue
		Alg  asn1.RawValue
		Sig  asn1.BitString
	}
	if _, err := asn1.Unmarshal(b.Bytes, &raw); err != nil {
		t.Fatal(err)
	}
	raw.Sig.Bytes[len(raw.Sig.Bytes)-1] ^= 0xff
	der, err := asn1.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	a := &kubetasks.Approver{TokenID: "abcdef"}
	c := &kubetasks.CSR{Name: "x", SignerName: kubetasks.SignerKubeletClient, Username: "system:bootstrap:abcdef",
		Usages: []string{"digital signature", "client auth"}, Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}
	d := a.Decide(context.Background(), c, nil, []*kubetasks.CSR{c})
	if d.Approve || !strings.Contains(d.Reason, "does not parse") && !strings.Contains(d.Reason, "signature does not verify") {
		t.Errorf("a forged request: %v", d)
	}
}
