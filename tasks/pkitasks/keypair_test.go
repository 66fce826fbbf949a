package pkitasks_test

import (
	"bytes"
	"context"
	"errors"
	"kubeup.dev/kubeup/tasks/storetasks/storetest"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/pkitasks"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// memStore is an in-memory state store (storetest); the real ones are tested in statestore.
type memStore = storetest.MemStore

type world struct{ store *memStore }

func (w *world) StateStore() storetasks.Store { return w.store }

func newWorld() *world { return &world{store: &memStore{Objects: map[string]string{}}} }

type keypair = pkitasks.Keypair[*world]

const (
	dir          = "demo.example.com/pki"
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
	day          = 24 * time.Hour
)

// keystore is a small keystore: a CA, a server certificate it signs, a client certificate it signs and a bare
// key, all on the clock now. Its fields are the tasks of the last graph built.
type keystore struct {
	now         time.Time
	caName      string // the CA's common name ("ca")
	dnsNames    []string
	ipAddresses []string

	ca, server, client, key *keypair
}

func newKeystore() *keystore {
	return &keystore{now: t0, caName: "ca", dnsNames: []string{"b.example.com", "a.example.com"}, ipAddresses: []string{"127.0.0.1"}}
}

func (k *keystore) build() *engine.Graph[*world] {
	g := engine.NewGraph[*world]()
	now := func() time.Time { return k.now }
	add := func(kp *keypair) *keypair {
		kp.Dir, kp.Status, kp.Now = dir, pkitasks.Valid, now
		switch kp.Usage {
		case pkitasks.UsageCA:
			kp.Lifetime = caLifetime
		case pkitasks.UsageKey:
		default:
			kp.Lifetime = leafLifetime
		}
		return engine.Add(g, kp)
	}
	k.ca = add(&keypair{Name: "ca", CommonName: k.caName, Usage: pkitasks.UsageCA})
	k.server = add(&keypair{Name: "server", CommonName: "server", Usage: pkitasks.UsageServer, Signer: k.ca,
		DNSNames: k.dnsNames, IPAddresses: k.ipAddresses})
	k.client = add(&keypair{Name: "client", CommonName: "system:client", Organization: []string{"system:masters"},
		Usage: pkitasks.UsageClient, Signer: k.ca})
	k.key = add(&keypair{Name: "sa", Usage: pkitasks.UsageKey})
	return g
}

// run runs the keystore's graph, logging to a buffer, and returns the plan as text and the logs.
func (k *keystore) run(t *testing.T, w *world, target engine.Target) (plan *engine.Plan, text, logs string, err error) {
	t.Helper()
	var logBuf bytes.Buffer
	res, err := engine.Run(context.Background(), k.build(), w, engine.Options{
		Target: target,
		Logger: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		return nil, "", logBuf.String(), err
	}
	var b bytes.Buffer
	if err := res.Plan.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return res.Plan, b.String(), logBuf.String(), nil
}

func (k *keystore) mustRun(t *testing.T, w *world, target engine.Target) (*engine.Plan, string, string) {
	t.Helper()
	plan, text, logs, err := k.run(t, w, target)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return plan, text, logs
}

func decodeStored(t *testing.T, w *world, name string) *pkitasks.Issued {
	t.Helper()
	obj := w.store.Get(dir + "/" + name)
	if obj == "" {
		t.Fatalf("no object %s/%s", dir, name)
	}
	is, err := pkitasks.Decode([]byte(obj))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return is
}

// changeOf returns the plan's change of the keypair name, or nil.
func changeOf(p *engine.Plan, name string) *engine.Change {
	for i, c := range p.Changes {
		if c.Key == (engine.Key{Type: "Keypair", Name: name}) {
			return &p.Changes[i]
		}
	}
	return nil
}

func fieldNames(c *engine.Change) []string {
	var names []string
	for _, f := range c.Fields {
		names = append(names, f.Name)
	}
	return names
}

// TestKeypairCreateThenValid creates a keystore, then finds every keypair valid: a dry run after the apply, and
// a second apply, change nothing.
func TestKeypairCreateThenValid(t *testing.T) {
	w := newWorld()
	k := newKeystore()
	applied := enginetest.ApplyThenNoChanges(t, context.Background(), w, k.build)
	if len(applied.Changes) != 4 {
		t.Errorf("the apply made %d changes, want 4 (a CA, two certificates, a key)", len(applied.Changes))
	}
	for _, c := range applied.Changes {
		if c.Action != engine.Create {
			t.Errorf("%s: %s, want create", c.Key, c.Action)
		}
	}
	if w.store.Writes != 4 {
		t.Errorf("%d writes to the store, want 4: one object per keypair", w.store.Writes)
	}

	ca, server, client, key := decodeStored(t, w, "ca"), decodeStored(t, w, "server"), decodeStored(t, w, "client"), decodeStored(t, w, "sa")
	if !ca.Cert.IsCA || !server.SignedBy(ca) || !client.SignedBy(ca) || key.Cert != nil {
		t.Errorf("stored: CA %v, server signed by it %v, client signed by it %v, bare key %v", ca.Cert.IsCA, server.SignedBy(ca), client.SignedBy(ca), key.Cert == nil)
	}
	if got := strings.Join(slices.Sorted(slices.Values(server.Cert.DNSNames)), ","); got != "a.example.com,b.example.com" {
		t.Errorf("server DNS names %s", got)
	}

	// Find, on its own, says every keypair is valid, and hands its key and certificate to dependents.
	k.build()
	ctx := context.Background()
	for _, kp := range []*keypair{k.ca, k.server, k.client, k.key} {
		if kp.Signer != nil {
			kp.Signer.Issued = decodeStored(t, w, kp.Signer.Name)
		}
		actual, err := kp.Find(ctx, w)
		if err != nil {
			t.Fatalf("%s: Find: %v", kp.Name, err)
		}
		if actual == nil || actual.Status != pkitasks.Valid || actual.Issued == nil {
			t.Fatalf("%s: Find = %+v, want a valid keypair with its key", kp.Name, actual)
		}
		if actual.Issued.KeyPEM.Reveal() != decodeStored(t, w, kp.Name).KeyPEM.Reveal() {
			t.Errorf("%s: Find's key is not the stored one", kp.Name)
		}
	}
}

// TestKeypairRenewsALeafNearItsEnd: a certificate within 30 days of its end is issued again, and the dry run
// says why; its CA, and a certificate with more time left, are not.
func TestKeypairRenewsALeafNearItsEnd(t *testing.T) {
	w := newWorld()
	k := newKeystore()
	k.mustRun(t, w, engine.Apply)
	before := map[string]string{}
	for _, n := range []string{"ca", "server", "client", "sa"} {
		before[n] = w.store.Get(dir + "/" + n)
	}

	// 31 days before the end: nothing to do.
	k.now = t0.Add(leafLifetime - 31*day)
	if plan, text, _ := k.mustRun(t, w, engine.DryRun); !plan.Empty() {
		t.Fatalf("31 days before the end, the dry run plans changes:\n%s", text)
	}

	k.now = t0.Add(leafLifetime - 29*day)
	plan, text, _ := k.mustRun(t, w, engine.DryRun)
	if len(plan.Changes) != 2 || changeOf(plan, "server") == nil || changeOf(plan, "client") == nil {
		t.Fatalf("29 days before the end: want the server and client certificates issued again, got:\n%s", text)
	}
	c := changeOf(plan, "server")
	if c.Action != engine.Modify || strings.Join(fieldNames(c), ",") != "Status" {
		t.Errorf("server: %s of %v, want a modification of Status", c.Action, fieldNames(c))
	}
	end := t0.Add(leafLifetime).Format(time.RFC3339)
	for _, want := range []string{"Keypair/server", "ends " + end + ", in 29 days (renewed within 30 days of its end) -> valid"} {
		if !strings.Contains(text, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, text)
		}
	}
	if k.server.Issued != nil || k.client.Issued != nil {
		t.Error("in the dry run, a certificate to be issued again holds its old key and certificate: its dependents would carry them")
	}
	if k.ca.Issued == nil || k.key.Issued == nil {
		t.Error("in the dry run, the CA and the key that stay hold nothing")
	}

	k.mustRun(t, w, engine.Apply)
	for _, n := range []string{"ca", "sa"} {
		if w.store.Get(dir+"/"+n) != before[n] {
			t.Errorf("%s was written again", n)
		}
	}
	server := decodeStored(t, w, "server")
	if w.store.Get(dir+"/server") == before["server"] || !server.Cert.NotAfter.Equal(k.now.Add(leafLifetime)) {
		t.Errorf("server: not issued again (ends %s)", server.Cert.NotAfter)
	}
	if !server.SignedBy(decodeStored(t, w, "ca")) {
		t.Error("the new server certificate is not signed by the CA")
	}
	if plan, text, _ := k.mustRun(t, w, engine.DryRun); !plan.Empty() {
		t.Errorf("after the renewal, the dry run plans changes:\n%s", text)
	}
}

func TestKeypairRenewsAnExpiredLeaf(t *testing.T) {
	w := newWorld()
	k := newKeystore()
	k.mustRun(t, w, engine.Apply)
	k.now = t0.Add(leafLifetime + day)
	_, text, _ := k.mustRun(t, w, engine.DryRun)
	if want := "expired " + t0.Add(leafLifetime).Format(time.RFC3339) + " -> valid"; !strings.Contains(text, want) {
		t.Errorf("the dry run does not say %q:\n%s", want, text)
	}
}

// TestKeypairRenewsALeafOfAnotherCA: an operator replaced the CA by hand (docs/pki.md); every certificate the
// old one signed is issued again, by the new one.
func TestKeypairRenewsALeafOfAnotherCA(t *testing.T) {
	w := newWorld()
	k := newKeystore()
	k.mustRun(t, w, engine.Apply)
	newCA := mustIssue(t, caRequest("ca"), nil, t0)
	w.store.Objects[dir+"/ca"] = newCA.Encode().Reveal()

	plan, text, _ := k.mustRun(t, w, engine.DryRun)
	if len(plan.Changes) != 2 || changeOf(plan, "server") == nil || changeOf(plan, "client") == nil {
		t.Fatalf("want the server and client certificates issued again, got:\n%s", text)
	}
	if !strings.Contains(text, "not signed by the current ca -> valid") {
		t.Errorf("the dry run does not say why:\n%s", text)
	}
	if k.server.Issued != nil {
		t.Error("in the dry run, the certificate of the old CA is handed to dependents")
	}
	k.mustRun(t, w, engine.Apply)
	if w.store.Get(dir+"/ca") != newCA.Encode().Reveal() {
		t.Error("the CA put in place by hand was replaced")
	}
	for _, n := range []string{"server", "client"} {
		if !decodeStored(t, w, n).SignedBy(newCA) {
			t.Errorf("%s is not signed by the new CA", n)
		}
	}
	if plan, text, _ := k.mustRun(t, w, engine.DryRun); !plan.Empty() {
		t.Errorf("after the new issue, the dry run plans changes:\n%s", text)
	}
}

// TestKeypairRenewsOnNewNames: a certificate whose names no longer match (a renamed cluster, a new service
// range) is issued again; the dry run shows the names before and after.
func TestKeypairRenewsOnNewNames(t *testing.T) {
	w := newWorld()
	k := newKeystore()
	k.mustRun(t, w, engine.Apply)

	k.dnsNames = []string{"a.example.com", "c.example.com"}
	k.ipAddresses = []string{"127.0.0.1", "100.65.0.1"}
	plan, text, _ := k.mustRun(t, w, engine.DryRun)
	c := changeOf(plan, "server")
	if len(plan.Changes) != 1 || c == nil {
		t.Fatalf("want the server certificate issued again, and nothing else:\n%s", text)
	}
	if got := strings.Join(fieldNames(c), ","); got != "DNSNames,IPAddresses" {
		t.Errorf("changed fields %s, want DNSNames,IPAddresses", got)
	}
	for _, want := range []string{
		"DNSNames       [a.example.com, b.example.com] -> [a.example.com, c.example.com]",
		"IPAddresses    [127.0.0.1] -> [127.0.0.1, 100.65.0.1]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the dry run does not show %q:\n%s", want, text)
		}
	}
	if k.server.Issued != nil {
		t.Error("in the dry run, the certificate with the old names is handed to dependents")
	}

	k.mustRun(t, w, engine.Apply)
	server := decodeStored(t, w, "server")
	var ips []string
	for _, ip := range server.Cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	if got := strings.Join(server.Cert.DNSNames, ",") + " " + strings.Join(ips, ","); got != "a.example.com,c.example.com 100.65.0.1,127.0.0.1" &&
		got != "a.example.com,c.example.com 127.0.0.1,100.65.0.1" {
		t.Errorf("the new certificate names %s", got)
	}
	if plan, text, _ := k.mustRun(t, w, engine.DryRun); !plan.Empty() {
		t.Errorf("after the new issue, the dry run plans changes:\n%s", text)
	}
}

// TestKeypairNeverReplacesACA: a CA in the store that is not what the task asks is refused, in a dry run as in
// an apply, with a message that says why; nothing is written.
func TestKeypairNeverReplacesACA(t *testing.T) {
	w := newWorld()
	k := newKeystore()
	k.mustRun(t, w, engine.Apply)
	stored := w.store.Get(dir + "/ca")
	writes := w.store.Writes

	k.caName = "ca-renamed"
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		_, _, _, err := k.run(t, w, target)
		if err == nil {
			t.Fatalf("%s: a CA with another subject was accepted", target)
		}
		msg := err.Error()
		for _, want := range []string{"Keypair/ca", "CA ca in the state store (demo.example.com/pki/ca) is not what the spec asks ([subject])",
			"kubeup never replaces a CA", "docs/pki.md"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q does not say %q", target, msg, want)
			}
		}
	}
	if w.store.Get(dir+"/ca") != stored || w.store.Writes != writes {
		t.Error("the CA, or something signed by it, was written")
	}
}

// TestKeypairNeverRenewsACA: a CA near its end, or past it, is kept; the run says so in its logs.
func TestKeypairNeverRenewsACA(t *testing.T) {
	for _, tt := range []struct {
		name    string
		at      time.Duration
		wantLog string
	}{
		{"10 days before its end", caLifetime - 10*day, `level=WARN msg="the CA ends soon; kubeup never replaces a CA by itself: see docs/pki.md" task=Keypair/ca keypair=ca`},
		{"expired", caLifetime + day, `level=ERROR msg="the CA has expired: every certificate it signed is refused; see docs/pki.md" task=Keypair/ca keypair=ca`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			k := newKeystore()
			k.mustRun(t, w, engine.Apply)
			stored := w.store.Get(dir + "/ca")
			k.now = t0.Add(tt.at)
			for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
				plan, text, logs := k.mustRun(t, w, target)
				if changeOf(plan, "ca") != nil {
					t.Errorf("%s: the CA is to be changed:\n%s", target, text)
				}
				if !strings.Contains(logs, tt.wantLog) {
					t.Errorf("%s: the logs do not say %q:\n%s", target, tt.wantLog, logs)
				}
			}
			if w.store.Get(dir+"/ca") != stored {
				t.Error("the CA was issued again")
			}
		})
	}
}

func TestKeypairValidate(t *testing.T) {
	ca := &keypair{Name: "ca", CommonName: "ca", Usage: pkitasks.UsageCA, Lifetime: caLifetime}
	leaf := &keypair{Name: "leaf", CommonName: "leaf", Usage: pkitasks.UsageClient, Signer: ca, Lifetime: leafLifetime}
	key := &keypair{Name: "sa", Usage: pkitasks.UsageKey}
	for _, tt := range []struct {
		name    string
		task    *keypair
		wantErr string
	}{
		{"a CA", ca, ""},
		{"a certificate signed by a CA", leaf, ""},
		{"a bare key", key, ""},
		{"a server certificate without a signer", &keypair{Name: "s", CommonName: "s", Usage: pkitasks.UsageServer, Lifetime: leafLifetime},
			"keypair s: a server certificate needs a CA as its signer"},
		{"a client certificate signed by a client certificate", &keypair{Name: "c", CommonName: "c", Usage: pkitasks.UsageClient, Signer: leaf, Lifetime: leafLifetime},
			"keypair c: a client certificate needs a CA as its signer"},
		{"a peer certificate signed by a bare key", &keypair{Name: "p", CommonName: "p", Usage: pkitasks.UsagePeer, Signer: key, Lifetime: leafLifetime},
			"keypair p: a peer certificate needs a CA as its signer"},
		{"a CA with a signer", &keypair{Name: "ca2", CommonName: "ca2", Usage: pkitasks.UsageCA, Signer: ca, Lifetime: caLifetime},
			"keypair ca2: a ca has no signer"},
		{"a bare key with a signer", &keypair{Name: "k", Usage: pkitasks.UsageKey, Signer: ca}, "keypair k: a key has no signer"},
		{"a certificate without a name", &keypair{Name: "n", Usage: pkitasks.UsageClient, Signer: ca, Lifetime: leafLifetime},
			"keypair n: CommonName is required"},
		{"an unknown usage", &keypair{Name: "u", CommonName: "u", Usage: "signing", Signer: ca, Lifetime: leafLifetime}, `keypair u: usage "signing"`},
		{"an IP address not in canonical form", &keypair{Name: "ip", CommonName: "ip", Usage: pkitasks.UsageServer, Signer: ca, Lifetime: leafLifetime, IPAddresses: []string{"FD00:0::1"}},
			`IP address "FD00:0::1" is not in canonical form`},
		{"a lifetime within the renewal window", &keypair{Name: "l", CommonName: "l", Usage: pkitasks.UsageClient, Signer: ca, Lifetime: 30 * day},
			"it would be issued again on every run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.task.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}

	// The engine asks before it reads anything.
	g := engine.NewGraph[*world]()
	engine.Add(g, &keypair{Name: "s", Dir: dir, CommonName: "s", Usage: pkitasks.UsageServer, Lifetime: leafLifetime, Status: pkitasks.Valid})
	w := newWorld()
	_, err := engine.Run(context.Background(), g, w, engine.Options{Target: engine.DryRun})
	var invalid *engine.ValidationError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "Keypair/s: keypair s: a server certificate needs a CA as its signer") {
		t.Errorf("Run = %v, want a validation error", err)
	}
}

// TestKeypairUnreadableObject: an object that is not a keypair is never overwritten, and the error names it
// without quoting it.
func TestKeypairUnreadableObject(t *testing.T) {
	w := newWorld()
	k := newKeystore()
	k.mustRun(t, w, engine.Apply)
	ca := decodeStored(t, w, "ca")
	other := mustIssue(t, pkitasks.Request{CommonName: "x", Usage: pkitasks.UsageClient, Lifetime: leafLifetime}, ca, t0)
	for _, tt := range []struct {
		name, obj string
	}{
		{"junk", "hunter2-a-secret-that-is-not-a-keypair\n"},
		{"another key", decodeStored(t, w, "server").CertPEM + other.KeyPEM.Reveal()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w.store.Objects[dir+"/server"] = tt.obj
			for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
				_, _, logs, err := k.run(t, w, target)
				if err == nil {
					t.Fatalf("%s: an unreadable keypair was accepted", target)
				}
				msg := err.Error()
				if !strings.Contains(msg, "keypair server in the state store (demo.example.com/pki/server) cannot be read") {
					t.Errorf("%s: error %q", target, msg)
				}
				for _, line := range strings.Split(tt.obj, "\n") {
					if len(line) >= 8 && !strings.HasPrefix(line, "-----") && (strings.Contains(msg, line) || strings.Contains(logs, line)) {
						t.Errorf("%s: the error or the logs quote the object", target)
					}
				}
			}
			if w.store.Get(dir+"/server") != tt.obj {
				t.Error("the unreadable object was overwritten")
			}
		})
	}
}

// TestKeypairPlanShowsNoKey: a plan lists a keypair's subject and names, never its key, in text or JSON.
func TestKeypairPlanShowsNoKey(t *testing.T) {
	w := newWorld()
	k := newKeystore()
	plan, _, logs := k.mustRun(t, w, engine.Apply)
	k.now = t0.Add(leafLifetime - day)
	renewed, _, renewLogs := k.mustRun(t, w, engine.Apply)
	for _, p := range []*engine.Plan{plan, renewed} {
		var text, js bytes.Buffer
		if err := p.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := p.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{text.String(), js.String(), logs, renewLogs} {
			if strings.Contains(out, "PRIVATE KEY") {
				t.Errorf("a key in the output:\n%s", out)
			}
			for _, n := range []string{"ca", "server", "client", "sa"} {
				if strings.Contains(out, keyBody(decodeStored(t, w, n))) {
					t.Errorf("the key of %s is in the output", n)
				}
			}
		}
	}
}

// keyBody is the base64 of a key's PEM, without its armour: what must never be printed, however it is wrapped.
func keyBody(is *pkitasks.Issued) string {
	lines := strings.Split(strings.TrimSpace(is.KeyPEM.Reveal()), "\n")
	return strings.Join(lines[1:len(lines)-1], "")[:40]
}

func TestKeypairDeps(t *testing.T) {
	ca := &keypair{Name: "ca", Usage: pkitasks.UsageCA}
	enginetest.CheckDeps(t, ca)
	enginetest.CheckDeps(t, &keypair{Name: "leaf", Usage: pkitasks.UsageClient, Signer: ca})
}
