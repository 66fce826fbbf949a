package pkitasks_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/tasks/pkitasks"
)

// t0 is the tests' clock: a whole second, as certificates keep times.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustIssue(t testing.TB, r pkitasks.Request, signer *pkitasks.Issued, now time.Time) *pkitasks.Issued {
	t.Helper()
	is, err := pkitasks.Issue(r, signer, now)
	if err != nil {
		t.Fatalf("Issue(%s): %v", r.CommonName, err)
	}
	return is
}

func caRequest(cn string) pkitasks.Request {
	return pkitasks.Request{CommonName: cn, Usage: pkitasks.UsageCA, Lifetime: 10 * 365 * 24 * time.Hour}
}

// TestIssueDecodeRoundTrip issues a CA, a certificate of each usage it signs and a bare key, and reads each back
// from what Encode wrote: the same certificate, the same key, and a certificate that says what was asked.
func TestIssueDecodeRoundTrip(t *testing.T) {
	ca := mustIssue(t, caRequest("test-ca"), nil, t0)
	otherCA := mustIssue(t, caRequest("test-ca"), nil, t0)
	for _, tt := range []struct {
		name    string
		req     pkitasks.Request
		signer  *pkitasks.Issued
		isCA    bool
		extKeys []x509.ExtKeyUsage
	}{
		{name: "CA", req: caRequest("test-ca-2"), isCA: true},
		{name: "server", signer: ca, extKeys: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			req: pkitasks.Request{CommonName: "kube-apiserver", Usage: pkitasks.UsageServer, Lifetime: 365 * 24 * time.Hour,
				DNSNames: []string{"api.demo.example.com", "localhost"}, IPAddresses: []string{"100.64.0.1", "127.0.0.1", "fd00::1"}}},
		{name: "client", signer: ca, extKeys: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			req: pkitasks.Request{CommonName: "kubeup-admin", Organization: []string{"system:masters"}, Usage: pkitasks.UsageClient, Lifetime: 18 * time.Hour}},
		{name: "peer", signer: ca, extKeys: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			req: pkitasks.Request{CommonName: "a.etcd-main.internal.demo.example.com", Usage: pkitasks.UsagePeer, Lifetime: 365 * 24 * time.Hour,
				DNSNames: []string{"a.etcd-main.internal.demo.example.com"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := mustIssue(t, tt.req, tt.signer, t0)
			back, err := pkitasks.Decode([]byte(is.Encode().Reveal()))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !back.Cert.Equal(is.Cert) || back.CertPEM != is.CertPEM {
				t.Error("the certificate read back is not the one issued")
			}
			if back.KeyPEM.Reveal() != is.KeyPEM.Reveal() || !back.Key.Public().(*ecdsa.PublicKey).Equal(is.Key.Public()) {
				t.Error("the key read back is not the one issued")
			}
			if k, ok := back.Key.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
				t.Errorf("the key is a %T, want an ECDSA P-256 key", back.Key)
			}

			c := back.Cert
			if c.Subject.CommonName != tt.req.CommonName || !slices.Equal(c.Subject.Organization, tt.req.Organization) {
				t.Errorf("subject %v, want CN %s O %v", c.Subject, tt.req.CommonName, tt.req.Organization)
			}
			if !slices.Equal(c.DNSNames, tt.req.DNSNames) {
				t.Errorf("DNS names %v, want %v", c.DNSNames, tt.req.DNSNames)
			}
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(ips, tt.req.IPAddresses) {
				t.Errorf("IP addresses %v, want %v", ips, tt.req.IPAddresses)
			}
			if c.IsCA != tt.isCA || !c.BasicConstraintsValid {
				t.Errorf("IsCA %v, want %v (basic constraints valid: %v)", c.IsCA, tt.isCA, c.BasicConstraintsValid)
			}
			if diff := cmp.Diff(tt.extKeys, c.ExtKeyUsage); diff != "" {
				t.Errorf("extended key usages (-want +got):\n%s", diff)
			}
			if tt.isCA != (c.KeyUsage&x509.KeyUsageCertSign != 0) {
				t.Errorf("key usage %b: only a CA may sign certificates", c.KeyUsage)
			}
			// Valid from an hour before its issue (a node whose clock is a little behind), for its lifetime.
			if !c.NotBefore.Equal(t0.Add(-time.Hour)) || !c.NotAfter.Equal(t0.Add(tt.req.Lifetime)) {
				t.Errorf("valid %s to %s, want %s to %s", c.NotBefore, c.NotAfter, t0.Add(-time.Hour), t0.Add(tt.req.Lifetime))
			}

			if tt.signer == nil {
				if !back.SignedBy(back) {
					t.Error("a CA is not self-signed")
				}
				return
			}
			if !back.SignedBy(tt.signer) {
				t.Error("SignedBy(its signer) = false")
			}
			if back.SignedBy(otherCA) {
				t.Error("SignedBy(another CA with the same name) = true")
			}
			// What a TLS peer checks: the chain to the CA, for the usage asked.
			roots := x509.NewCertPool()
			roots.AddCert(tt.signer.Cert)
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: t0, KeyUsages: tt.extKeys}); err != nil {
				t.Errorf("the certificate does not verify against its CA: %v", err)
			}
		})
	}
}

func TestIssueKeyRoundTrip(t *testing.T) {
	is, err := pkitasks.IssueKey()
	if err != nil {
		t.Fatal(err)
	}
	obj := is.Encode().Reveal()
	if strings.Contains(obj, "CERTIFICATE") {
		t.Errorf("a bare key's object holds a certificate")
	}
	back, err := pkitasks.Decode([]byte(obj))
	if err != nil {
		t.Fatal(err)
	}
	if back.Cert != nil || back.CertPEM != "" || back.KeyPEM.Reveal() != is.KeyPEM.Reveal() {
		t.Errorf("read back: cert %v, key equal %v", back.Cert, back.KeyPEM.Reveal() == is.KeyPEM.Reveal())
	}
	pub, err := back.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode([]byte(pub))
	if b == nil || b.Type != "PUBLIC KEY" {
		t.Fatalf("PublicKeyPEM = %q", pub)
	}
	k, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil || !is.Key.Public().(*ecdsa.PublicKey).Equal(k) {
		t.Errorf("PublicKeyPEM is not the key's public half (%v)", err)
	}
	if strings.Contains(pub, "PRIVATE") {
		t.Error("PublicKeyPEM holds a private key")
	}
}

func TestIssueRefuses(t *testing.T) {
	ca := mustIssue(t, caRequest("ca"), nil, t0)
	leaf := mustIssue(t, pkitasks.Request{CommonName: "leaf", Usage: pkitasks.UsageClient, Lifetime: time.Hour}, ca, t0)
	bare, err := pkitasks.IssueKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		req     pkitasks.Request
		signer  *pkitasks.Issued
		wantErr string
	}{
		{"not an IP address", pkitasks.Request{CommonName: "x", Usage: pkitasks.UsageServer, Lifetime: time.Hour, IPAddresses: []string{"api.example.com"}}, ca,
			`"api.example.com" is not an IP address`},
		{"unknown usage", pkitasks.Request{CommonName: "x", Usage: "signing", Lifetime: time.Hour}, ca, `usage "signing"`},
		{"a bare key's usage", pkitasks.Request{CommonName: "x", Usage: pkitasks.UsageKey, Lifetime: time.Hour}, nil, `usage "key"`},
		{"signed by a leaf", pkitasks.Request{CommonName: "x", Usage: pkitasks.UsageClient, Lifetime: time.Hour}, leaf, "its signer is not a CA"},
		{"signed by a bare key", pkitasks.Request{CommonName: "x", Usage: pkitasks.UsageClient, Lifetime: time.Hour}, bare, "its signer is not a CA"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is, err := pkitasks.Issue(tt.req, tt.signer, t0)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Issue = %v, %v; want an error containing %q", is, err, tt.wantErr)
			}
		})
	}
}

// TestIssueEndsWithItsCA: a certificate asked for longer than its CA lives ends with its CA, which would make it
// useless after anyway.
func TestIssueEndsWithItsCA(t *testing.T) {
	ca := mustIssue(t, pkitasks.Request{CommonName: "ca", Usage: pkitasks.UsageCA, Lifetime: 48 * time.Hour}, nil, t0)
	leaf := mustIssue(t, pkitasks.Request{CommonName: "leaf", Usage: pkitasks.UsageClient, Lifetime: 365 * 24 * time.Hour}, ca, t0)
	if !leaf.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("the leaf ends %s, its CA %s: want it to end with its CA", leaf.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

func pemBlock(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// TestDecodeRefuses reads objects that are not a keypair Encode wrote. Each is refused, and the error quotes
// nothing of the object: not a line of its PEM, not its text.
func TestDecodeRefuses(t *testing.T) {
	ca := mustIssue(t, caRequest("ca"), nil, t0)
	leaf := mustIssue(t, pkitasks.Request{CommonName: "leaf", Usage: pkitasks.UsageClient, Lifetime: time.Hour}, ca, t0)
	other := mustIssue(t, pkitasks.Request{CommonName: "other", Usage: pkitasks.UsageClient, Lifetime: time.Hour}, ca, t0)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey))
	secretText := "hunter2-this-is-not-a-key-but-it-may-be-a-secret"
	for _, tt := range []struct {
		name    string
		obj     string
		wantErr string
	}{
		{"empty", "", "no private key"},
		{"a certificate and no key", leaf.CertPEM, "no private key"},
		{"two certificates", leaf.CertPEM + other.CertPEM + leaf.KeyPEM.Reveal(), "more than one certificate"},
		{"two keys", leaf.CertPEM + leaf.KeyPEM.Reveal() + other.KeyPEM.Reveal(), "more than one private key"},
		{"a certificate that is not the key's", leaf.CertPEM + other.KeyPEM.Reveal(), "the certificate is not the private key's"},
		{"junk", secretText + "\n", "data that is not PEM"},
		{"junk after the key", leaf.CertPEM + leaf.KeyPEM.Reveal() + secretText + "\n", "data that is not PEM"},
		{"a PKCS #1 key", pkcs1, `type "RSA PRIVATE KEY"`},
		{"a key block that is not PKCS #8", pemBlock("PRIVATE KEY", []byte(secretText)), "does not parse as PKCS #8"},
		{"a certificate block that does not parse", pemBlock("CERTIFICATE", []byte(secretText)) + leaf.KeyPEM.Reveal(), "the certificate does not parse"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is, err := pkitasks.Decode([]byte(tt.obj))
			if err == nil {
				t.Fatalf("Decode accepted it: %v", is)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantErr) {
				t.Errorf("Decode error %q, want one containing %q", msg, tt.wantErr)
			}
			for _, line := range strings.Split(tt.obj, "\n") {
				if len(line) >= 8 && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line) {
					t.Errorf("the error quotes the object: %q", line)
				}
			}
			for _, secret := range []string{secretText, "hunter2", leaf.KeyPEM.Reveal(), other.KeyPEM.Reveal()} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error quotes the object's secret")
				}
			}
		})
	}
}

// TestDecodeLeadingText pins what Decode does with text before the first PEM block. pem.Decode skips it, so it
// is accepted, unlike text after the last block.
func TestDecodeLeadingText(t *testing.T) {
	ca := mustIssue(t, caRequest("ca"), nil, t0)
	obj := "a comment someone added\n" + ca.Encode().Reveal()
	back, err := pkitasks.Decode([]byte(obj))
	if err != nil {
		if strings.Contains(err.Error(), "a comment") {
			t.Errorf("the error quotes the object: %v", err)
		}
		return // refusing it is as good
	}
	if !back.Cert.Equal(ca.Cert) {
		t.Error("the keypair read after leading text is not the one written")
	}
}

// TestEncodeHoldsOnlyPEM checks the stored object: the certificate, then the key, nothing else.
func TestEncodeHoldsOnlyPEM(t *testing.T) {
	ca := mustIssue(t, caRequest("ca"), nil, t0)
	obj := []byte(ca.Encode().Reveal())
	var types []string
	for {
		var b *pem.Block
		b, obj = pem.Decode(obj)
		if b == nil {
			break
		}
		types = append(types, b.Type)
	}
	if diff := cmp.Diff([]string{"CERTIFICATE", "PRIVATE KEY"}, types); diff != "" || len(bytes.TrimSpace(obj)) != 0 {
		t.Errorf("blocks (-want +got):\n%s\nrest %q", diff, obj)
	}
	if got := ca.Encode().String(); got != "(sensitive)" {
		t.Errorf("Encode().String() = %q: the object holds the key", got)
	}
}
