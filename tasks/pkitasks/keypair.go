package pkitasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"slices"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// Valid is the Status of a keypair that needs nothing done: its key and certificate parse and belong together,
// its certificate is signed by its signer's current certificate, and it is not within RenewBefore of its end.
const Valid = "valid"

// RenewBefore is how long before its end a certificate is issued again. A CA is never issued again by kubeup;
// within this window a run warns.
const RenewBefore = 30 * 24 * time.Hour

// Keypair is a private key and its certificate in the state store's keystore, one object at Dir/Name (the
// certificate then the key, in PEM; see Issued.Encode), issued by Signer's key (self-signed for a CA). Find reads
// it and says, field by field, how it differs from what the spec asks: its subject, names and usage, and in
// Status why it is due (it ends within RenewBefore, or its signer's certificate is not the one that signed it).
// Render issues a new key and certificate and replaces the object in one write.
//
// A CA is never replaced: CheckChanges refuses a change to a CA that exists, since every certificate it signed
// would stop being trusted at once. Replacing one is a step an operator takes by hand (docs/pki.md).
//
// Once found valid or issued, Issued holds the key and certificate, for the tasks that carry them to the nodes
// (a keypair that is due for a new issue holds none until it is issued).
type Keypair[C storetasks.World] struct {
	// Name is the keypair's name in the keystore ("kubernetes-ca", "kube-apiserver") and the task's.
	Name string
	// Dir is the keystore's directory in the state store (<cluster>/pki).
	Dir string `kubeup:"-"`
	// CommonName and Organization are the certificate's subject (unset for a bare key).
	CommonName   string
	Organization []string `kubeup:"nilempty"`
	// Usage is UsageCA, UsageServer, UsageClient, UsagePeer or UsageKey.
	Usage string
	// DNSNames and IPAddresses are the certificate's subject alternative names, sorted.
	DNSNames    []string `kubeup:"set,nilempty"`
	IPAddresses []string `kubeup:"set,nilempty"`
	// Signer is the CA that signs the certificate; nil for a CA (self-signed) and a bare key.
	Signer *Keypair[C]
	// Lifetime is a new certificate's validity.
	Lifetime time.Duration `kubeup:"-"`
	// Status is Valid in a task; Find says why an object is not.
	Status string
	// Now is the clock (time.Now when nil).
	Now func() time.Time `kubeup:"-"`

	// Issued is the key and certificate: written by Find when the object is valid, by Render when it issues one.
	Issued *Issued `kubeup:"output"`
}

var (
	_ engine.Resource[*Keypair[storetasks.World], storetasks.World] = (*Keypair[storetasks.World])(nil)
	_ engine.Renderer[*Keypair[storetasks.World], storetasks.World] = (*Keypair[storetasks.World])(nil)
	_ engine.Validator                                              = (*Keypair[storetasks.World])(nil)
)

func (k *Keypair[C]) Key() engine.Key { return engine.Key{Type: "Keypair", Name: k.Name} }

func (k *Keypair[C]) Deps() []engine.Task {
	if k.Signer == nil {
		return nil
	}
	return []engine.Task{k.Signer}
}

// Path is the keypair's object in the state store.
func (k *Keypair[C]) Path() string { return k.Dir + "/" + k.Name }

func (k *Keypair[C]) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// Validate checks what the task asks: a usage it knows, a signer where one is needed and none where none is.
func (k *Keypair[C]) Validate() error {
	switch k.Usage {
	case UsageCA, UsageKey, UsageToken:
		if k.Signer != nil {
			return fmt.Errorf("keypair %s: a %s has no signer", k.Name, k.Usage)
		}
	case UsageServer, UsageClient, UsagePeer:
		if k.Signer == nil || k.Signer.Usage != UsageCA {
			return fmt.Errorf("keypair %s: a %s certificate needs a CA as its signer", k.Name, k.Usage)
		}
		if k.CommonName == "" {
			return fmt.Errorf("keypair %s: CommonName is required", k.Name)
		}
	default:
		return fmt.Errorf("keypair %s: usage %q: want %s, %s, %s, %s, %s or %s", k.Name, k.Usage, UsageCA, UsageServer, UsageClient, UsagePeer, UsageKey, UsageToken)
	}
	for _, ip := range k.IPAddresses {
		if parsed := net.ParseIP(ip); parsed == nil || parsed.String() != ip {
			return fmt.Errorf("keypair %s: IP address %q is not in canonical form (as Go prints it): it would differ from the certificate on every run", k.Name, ip)
		}
	}
	if k.Usage != UsageKey && k.Usage != UsageToken && k.Lifetime <= RenewBefore {
		return fmt.Errorf("keypair %s: a lifetime of %s is not longer than the renewal window (%s): it would be issued again on every run", k.Name, k.Lifetime, RenewBefore)
	}
	return nil
}

// Find reads the keypair's object; nil when there is none. An object that does not parse, or whose certificate
// is not its key's, is an error that names the object (never its contents): kubeup does not overwrite what it
// cannot read.
func (k *Keypair[C]) Find(ctx context.Context, world C) (*Keypair[C], error) {
	obj, err := world.StateStore().ReadFile(ctx, k.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if k.Usage == UsageToken {
		is, err := DecodeToken(obj)
		if err != nil {
			return nil, engine.Terminal(fmt.Errorf("bootstrap token %s in the state store (%s) cannot be read: %v; kubeup leaves it as it is: "+
				"move it away to have a new one issued (docs/pki.md)", k.Name, k.Path(), err))
		}
		return &Keypair[C]{Name: k.Name, Dir: k.Dir, Usage: UsageToken, Status: Valid, Issued: is}, nil
	}
	is, err := Decode(obj)
	if err != nil {
		return nil, engine.Terminal(fmt.Errorf("keypair %s in the state store (%s) cannot be read: %v; kubeup leaves it as it is: "+
			"move it away to have a new one issued (a CA: see docs/pki.md first)", k.Name, k.Path(), err))
	}
	actual := &Keypair[C]{Name: k.Name, Dir: k.Dir, Signer: k.Signer, Status: Valid}
	if is.Cert == nil {
		actual.Usage = UsageKey
		if k.Usage == UsageKey {
			actual.Issued = is
		}
		return actual, nil
	}
	c := is.Cert
	actual.CommonName = c.Subject.CommonName
	actual.Organization = c.Subject.Organization
	actual.Usage = usageOf(c)
	actual.DNSNames = slices.Sorted(slices.Values(c.DNSNames))
	for _, ip := range c.IPAddresses {
		actual.IPAddresses = append(actual.IPAddresses, ip.String())
	}
	slices.Sort(actual.IPAddresses)
	actual.Status = k.status(ctx, is)
	if k.Usage == UsageCA || k.stays(actual) {
		actual.Issued = is // dependents may use it only when it stays (a CA always does)
	}
	return actual, nil
}

// stays reports whether a found keypair is what k asks, so that it is not issued again.
func (k *Keypair[C]) stays(actual *Keypair[C]) bool {
	return actual.Status == Valid && actual.CommonName == k.CommonName && actual.Usage == k.Usage &&
		slices.Equal(actual.Organization, k.Organization) &&
		slices.Equal(actual.DNSNames, sorted(k.DNSNames)) && slices.Equal(actual.IPAddresses, sorted(k.IPAddresses))
}

func sorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(s))
}

// status says why a found keypair must be issued again, or Valid.
func (k *Keypair[C]) status(ctx context.Context, is *Issued) string {
	now := k.now()
	end := is.Cert.NotAfter
	if k.Usage == UsageCA {
		// A CA is kept as it is; an operator is told in time.
		switch {
		case !now.Before(end):
			engine.Logger(ctx).Error("the CA has expired: every certificate it signed is refused; see docs/pki.md", "keypair", k.Name, "notAfter", end)
		case end.Sub(now) < RenewBefore:
			engine.Logger(ctx).Warn("the CA ends soon; kubeup never replaces a CA by itself: see docs/pki.md", "keypair", k.Name, "notAfter", end)
		}
		return Valid
	}
	if k.Signer != nil {
		signer := k.Signer.Issued
		if signer == nil {
			return "its signer " + k.Signer.Name + " is to be issued first"
		}
		if !is.SignedBy(signer) {
			return "not signed by the current " + k.Signer.Name
		}
	}
	switch left := end.Sub(now); {
	case left <= 0:
		return "expired " + end.UTC().Format(time.RFC3339)
	case left < RenewBefore:
		return fmt.Sprintf("ends %s, in %d days (renewed within %d days of its end)", end.UTC().Format(time.RFC3339),
			int(left.Hours()/24), int(RenewBefore.Hours()/24))
	}
	return Valid
}

// CheckChanges refuses to replace a CA, and a keypair whose signer has nothing to sign with.
func (k *Keypair[C]) CheckChanges(actual, expected, changes *Keypair[C]) error {
	if actual != nil && expected.Usage == UsageCA {
		return fmt.Errorf("CA %s in the state store (%s) is not what the spec asks (%s): kubeup never replaces a CA by itself, "+
			"since every certificate it signed would stop being trusted at once; see docs/pki.md for how to replace one",
			expected.Name, expected.Path(), changedFields(changes))
	}
	return nil
}

func changedFields[C storetasks.World](c *Keypair[C]) string {
	var names []string
	if c.CommonName != "" || c.Organization != nil {
		names = append(names, "subject")
	}
	if c.Usage != "" {
		names = append(names, "usage")
	}
	if c.DNSNames != nil || c.IPAddresses != nil {
		names = append(names, "names")
	}
	if c.Status != "" {
		names = append(names, "status")
	}
	if len(names) == 0 {
		return "unchanged"
	}
	return fmt.Sprint(names)
}

// Render issues a new key and certificate (a bare key for UsageKey) and writes them in one object.
func (k *Keypair[C]) Render(ctx context.Context, world C, actual, expected, changes *Keypair[C]) error {
	var is *Issued
	var err error
	switch expected.Usage {
	case UsageKey:
		is, err = IssueKey()
	case UsageToken:
		is, err = IssueToken()
	default:
		var signer *Issued
		if expected.Signer != nil {
			if signer = expected.Signer.Issued; signer == nil {
				return fmt.Errorf("keypair %s: its signer %s holds no key", expected.Name, expected.Signer.Name)
			}
		}
		is, err = Issue(Request{
			CommonName: expected.CommonName, Organization: expected.Organization, Usage: expected.Usage,
			DNSNames: expected.DNSNames, IPAddresses: expected.IPAddresses, Lifetime: expected.Lifetime,
		}, signer, expected.now())
	}
	if err != nil {
		return engine.Terminal(err)
	}
	if err := world.StateStore().WriteFile(ctx, expected.Path(), []byte(is.Encode().Reveal())); err != nil {
		return fmt.Errorf("writing keypair %s to the state store: %w", expected.Name, err)
	}
	expected.Issued = is
	return nil
}
