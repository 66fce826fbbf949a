package pkitasks

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"kubeup.dev/kubeup/engine"
)

// Usages of a keypair: what its certificate may be used for.
const (
	// UsageCA signs other certificates.
	UsageCA = "ca"
	// UsageServer serves TLS (kube-apiserver, an etcd member's client port).
	UsageServer = "server"
	// UsageClient authenticates a client (kube-controller-manager, kube-apiserver to etcd).
	UsageClient = "client"
	// UsagePeer both serves and authenticates (an etcd member to its peers).
	UsagePeer = "peer"
	// UsageKey is a bare key pair without a certificate (the service-account signing key).
	UsageKey = "key"
	// UsageToken is a bootstrap token (<id>.<secret>, as kube-apiserver's bootstrap token authenticator reads
	// it): no key, no certificate.
	UsageToken = "token"
)

// Request is what a certificate says: its subject, its names and what it may be used for.
type Request struct {
	CommonName   string
	Organization []string
	// Usage is UsageCA, UsageServer, UsageClient or UsagePeer.
	Usage       string
	DNSNames    []string
	IPAddresses []string
	// Lifetime is how long the certificate is valid from now.
	Lifetime time.Duration
}

// Issued is a key and, unless it is a bare key, its certificate: what a keypair holds once found or issued.
type Issued struct {
	// Cert is the certificate; nil for a bare key.
	Cert *x509.Certificate
	// CertPEM is Cert in PEM; "" for a bare key.
	CertPEM string
	// Key is the private key.
	Key crypto.Signer
	// KeyPEM is the key in PEM (PKCS #8). It never leaves a Secret.
	KeyPEM engine.Secret
	// Token is a bootstrap token, <id>.<secret> (UsageToken: no key, no certificate).
	Token engine.Secret
}

// tokenPattern is a bootstrap token: a 6-character id and a 16-character secret, of [a-z0-9].
var tokenPattern = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// IssueToken makes a new bootstrap token from crypto/rand.
func IssueToken() (*Issued, error) {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 22)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(chars))))
		if err != nil {
			return nil, err
		}
		b[i] = chars[n.Int64()]
	}
	return &Issued{Token: engine.NewSecret(string(b[:6]) + "." + string(b[6:]))}, nil
}

// DecodeToken reads a stored bootstrap token (one line, <id>.<secret>); errors never quote it.
func DecodeToken(obj []byte) (*Issued, error) {
	t := strings.TrimSpace(string(obj))
	if !tokenPattern.MatchString(t) {
		return nil, errors.New("not a bootstrap token: want one line <6 of [a-z0-9]>.<16 of [a-z0-9]>")
	}
	return &Issued{Token: engine.NewSecret(t)}, nil
}

// TokenParts splits a bootstrap token into its id (public: it names the token's Secret) and its secret.
func (i *Issued) TokenParts() (id string, secret engine.Secret, ok bool) {
	m := tokenPattern.FindStringSubmatch(i.Token.Reveal())
	if m == nil {
		return "", engine.Secret{}, false
	}
	return m[1], engine.NewSecret(m[2]), true
}

// PublicKeyPEM is the public half of the key in PEM (PKIX): what verifies what the key signs.
func (i *Issued) PublicKeyPEM() (string, error) {
	der, err := x509.MarshalPKIXPublicKey(i.Key.Public())
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// The clock skew a new certificate tolerates: it is valid from an hour ago, so that a node whose clock is a little
// behind does not refuse it.
const backdate = time.Hour

// NewKey makes an ECDSA P-256 private key. P-256 rather than RSA-2048: the same strength as RSA-3072, keys made
// in microseconds rather than tens of milliseconds (a cluster makes dozens), smaller certificates, and every
// component kubeup runs accepts it: kube-apiserver and etcd for TLS, service-account tokens signed ES256.
func NewKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// Issue makes a new key and a certificate for it as r asks, signed by signer; a nil signer makes a
// self-signed certificate (a CA). now is the time of issue.
func Issue(r Request, signer *Issued, now time.Time) (*Issued, error) {
	key, err := NewKey()
	if err != nil {
		return nil, fmt.Errorf("making a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: r.CommonName, Organization: r.Organization},
		NotBefore:             now.Add(-backdate).UTC().Truncate(time.Second),
		NotAfter:              now.Add(r.Lifetime).UTC().Truncate(time.Second),
		BasicConstraintsValid: true,
		DNSNames:              r.DNSNames,
	}
	for _, s := range r.IPAddresses {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("certificate %s: %q is not an IP address", r.CommonName, s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	switch r.Usage {
	case UsageCA:
		tmpl.IsCA = true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	case UsageServer:
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case UsageClient:
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case UsagePeer:
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	default:
		return nil, fmt.Errorf("certificate %s: usage %q: want %s, %s, %s or %s", r.CommonName, r.Usage, UsageCA, UsageServer, UsageClient, UsagePeer)
	}
	parent, signerKey := tmpl, crypto.Signer(key)
	if signer != nil {
		if signer.Cert == nil || !signer.Cert.IsCA {
			return nil, fmt.Errorf("certificate %s: its signer is not a CA", r.CommonName)
		}
		parent, signerKey = signer.Cert, signer.Key
		// A certificate valid after its CA's end would be refused then anyway: it ends with its CA.
		if tmpl.NotAfter.After(signer.Cert.NotAfter) {
			tmpl.NotAfter = signer.Cert.NotAfter
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", r.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Issued{
		Cert: cert, CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Key: key, KeyPEM: keyPEM,
	}, nil
}

// IssueKey makes a bare key pair (UsageKey).
func IssueKey() (*Issued, error) {
	key, err := NewKey()
	if err != nil {
		return nil, fmt.Errorf("making a key: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Issued{Key: key, KeyPEM: keyPEM}, nil
}

func encodeKey(key crypto.Signer) (engine.Secret, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return engine.Secret{}, fmt.Errorf("encoding a key: %w", err)
	}
	return engine.NewSecret(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))), nil
}

// Encode is the object a keypair is stored as: its certificate (if any) then its key, in PEM; a bootstrap
// token as one line. It holds the private key: the state store keeps it as a secret (mode 0600 on file://).
func (i *Issued) Encode() engine.Secret {
	if i.Key == nil && i.Token.Reveal() != "" {
		return engine.NewSecret(i.Token.Reveal() + "\n")
	}
	return engine.NewSecret(i.CertPEM + i.KeyPEM.Reveal())
}

// Decode reads an object Encode wrote: one PRIVATE KEY block and at most one CERTIFICATE block, whose public key
// must be the key's. Errors never quote the object.
func Decode(obj []byte) (*Issued, error) {
	var certDER, keyDER []byte
	rest := obj
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			if certDER != nil {
				return nil, errors.New("more than one certificate")
			}
			certDER = b.Bytes
		case "PRIVATE KEY":
			if keyDER != nil {
				return nil, errors.New("more than one private key")
			}
			keyDER = b.Bytes
		default:
			return nil, fmt.Errorf("a PEM block of type %q: want CERTIFICATE and PRIVATE KEY", b.Type)
		}
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("data that is not PEM")
	}
	if keyDER == nil {
		return nil, errors.New("no private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(keyDER)
	if err != nil {
		return nil, errors.New("the private key does not parse as PKCS #8")
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a private key of type %T", k)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	out := &Issued{Key: key, KeyPEM: keyPEM}
	if certDER == nil {
		return out, nil
	}
	if out.Cert, err = x509.ParseCertificate(certDER); err != nil {
		return nil, fmt.Errorf("the certificate does not parse: %w", err)
	}
	pub, ok := out.Cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, errors.New("the certificate is not the private key's")
	}
	out.CertPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER}))
	return out, nil
}

// SignedBy reports whether i's certificate was signed by ca's key.
func (i *Issued) SignedBy(ca *Issued) bool {
	if i.Cert == nil || ca == nil || ca.Cert == nil {
		return false
	}
	return i.Cert.CheckSignatureFrom(ca.Cert) == nil
}

// usageOf says what a certificate may be used for, as a Request's Usage.
func usageOf(c *x509.Certificate) string {
	if c.IsCA {
		return UsageCA
	}
	server := slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	client := slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	switch {
	case server && client:
		return UsagePeer
	case server:
		return UsageServer
	case client:
		return UsageClient
	}
	return ""
}
