//go:build e2e

package localtasks

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

func newRFC2136(t *testing.T, b *e2e.BIND, secret string) *RFC2136 {
	t.Helper()
	r, err := NewRFC2136(b.Addr, b.Zone, b.KeyName, b.KeyAlgorithm, secret)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dig asks the server, with BIND's own client, for name and type: the referee of what the provider wrote.
func dig(t *testing.T, b *e2e.BIND, name, rrtype string) []string {
	t.Helper()
	host, port, _ := net.SplitHostPort(b.Addr)
	out := strings.Fields(e2e.MustRun(t, "dig", "@"+host, "-p", port, "+short", "+tcp", name, rrtype))
	slices.Sort(out)
	return out
}

// TestRFC2136BIND writes, reads, lists and deletes records on a real BIND, and checks with dig what it serves.
func TestRFC2136BIND(t *testing.T) {
	ctx := context.Background()
	b := e2e.StartBIND(t, "demo.example.com")
	e2e.RequireTools(t, "dig")
	r := newRFC2136(t, b, b.KeySecret)

	sets := []dnstasks.RecordSet{
		{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1", "10.0.0.2"}},
		{Name: "api.demo.example.com", Type: "AAAA", TTL: 300, Values: []string{"fd00::1"}},
		{Name: "demo.example.com", Type: "TXT", TTL: 30, Values: []string{`heritage="kubeup" \ ` + strings.Repeat("x", 300)}},
		{Name: "www.demo.example.com", Type: "CNAME", TTL: 120, Values: []string{"api.demo.example.com"}},
	}
	for _, rs := range sets {
		if err := r.Upsert(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	for _, rs := range sets {
		got, err := r.Get(ctx, rs.Name, rs.Type)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&rs, got); diff != "" {
			t.Errorf("Get %s %s (-want +got):\n%s", rs.Name, rs.Type, diff)
		}
	}
	list, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The zone's own name server's address is listed too: StartBIND's zone has it.
	want := append(slices.Clone(sets[:2]), sets[2], dnstasks.RecordSet{Name: "ns.demo.example.com", Type: "A", TTL: 300, Values: []string{"127.0.0.1"}}, sets[3])
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if got := dig(t, b, "api.demo.example.com", "A"); !slices.Equal(got, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Errorf("dig api A = %v", got)
	}
	if got := dig(t, b, "www.demo.example.com", "CNAME"); !slices.Equal(got, []string{"api.demo.example.com."}) {
		t.Errorf("dig www CNAME = %v", got)
	}

	// Upsert replaces the whole set.
	replaced := dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 10, Values: []string{"10.0.0.3"}}
	if err := r.Upsert(ctx, replaced); err != nil {
		t.Fatal(err)
	}
	if got := dig(t, b, "api.demo.example.com", "A"); !slices.Equal(got, []string{"10.0.0.3"}) {
		t.Errorf("dig api A after the replacement = %v", got)
	}

	// A CNAME beside other records: BIND ignores the update silently; Upsert must not.
	err = r.Upsert(ctx, dnstasks.RecordSet{Name: "api.demo.example.com", Type: "CNAME", TTL: 10, Values: []string{"x.demo.example.com"}})
	t.Logf("a CNAME beside an A record: %v", err)
	if err == nil || !strings.Contains(err.Error(), "a CNAME cannot share its name") {
		t.Errorf("a CNAME beside an A record: error %v", err)
	}

	for _, rs := range sets {
		if err := r.Delete(ctx, rs.Name, rs.Type); err != nil {
			t.Fatal(err)
		}
		if err := r.Delete(ctx, rs.Name, rs.Type); err != nil {
			t.Errorf("deleting an absent record: %v", err)
		}
		if got, err := r.Get(ctx, rs.Name, rs.Type); err != nil || got != nil {
			t.Errorf("Get after Delete = %v, %v", got, err)
		}
	}
	if got := dig(t, b, "api.demo.example.com", "A"); len(got) != 0 {
		t.Errorf("dig api A after Delete = %v", got)
	}
	if _, err := r.Get(ctx, "api.example.com", "A"); !errors.Is(err, dnstasks.ErrOutsideZone) {
		t.Errorf("a name outside the zone: %v, want ErrOutsideZone", err)
	}
}

// TestRFC2136BINDRecordTask applies Record tasks through the engine: a dry run after the apply shows no change.
func TestRFC2136BINDRecordTask(t *testing.T) {
	b := e2e.StartBIND(t, "demo.example.com")
	e2e.RequireTools(t, "dig")
	w := providerWorld{newRFC2136(t, b, b.KeySecret)}
	ttl := 120
	build := func() *engine.Graph[providerWorld] {
		g := engine.NewGraph[providerWorld]()
		engine.Add(g, &dnstasks.Record[providerWorld]{Name: "api.demo.example.com", Type: "A", TTL: &ttl, Values: []string{"10.0.0.2", "10.0.0.1"}})
		engine.Add(g, &dnstasks.Record[providerWorld]{Name: "api.demo.example.com", Type: "AAAA", Values: []string{"fd00::1"}})
		engine.Add(g, &dnstasks.Record[providerWorld]{Name: "etcd-a.internal.demo.example.com", Type: "A", Values: []string{"203.0.113.123"}, Placeholder: true})
		return g
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), w, build)
	if got := dig(t, b, "api.demo.example.com", "A"); !slices.Equal(got, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Errorf("dig api A = %v", got)
	}
	if got := dig(t, b, "etcd-a.internal.demo.example.com", "A"); !slices.Equal(got, []string{"203.0.113.123"}) {
		t.Errorf("dig etcd-a A = %v", got)
	}
}

// TestRFC2136BINDWrongKey: a wrong secret or key name is access denied, with a message that names the key.
func TestRFC2136BINDWrongKey(t *testing.T) {
	ctx := context.Background()
	b := e2e.StartBIND(t, "demo.example.com")
	wrongSecret := "c2VjcmV0LXRoYXQtaXMtbm90LXRoZS1zZXJ2ZXJzLWtleQ=="
	wrongName, err := NewRFC2136(b.Addr, b.Zone, "someone-else", b.KeyAlgorithm, b.KeySecret)
	if err != nil {
		t.Fatal(err)
	}
	rs := dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}}
	for _, tc := range []struct {
		name    string
		r       *RFC2136
		wantKey string
	}{
		{"wrong secret", newRFC2136(t, b, wrongSecret), "kubeup-e2e"},
		{"unknown key", wrongName, "someone-else"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for what, call := range map[string]func() error{
				"Upsert": func() error { return tc.r.Upsert(ctx, rs) },
				"Delete": func() error { return tc.r.Delete(ctx, rs.Name, rs.Type) },
				"Get":    func() error { _, err := tc.r.Get(ctx, rs.Name, rs.Type); return err },
				"List":   func() error { _, err := tc.r.List(ctx); return err },
			} {
				err := call()
				t.Logf("%s: %v", what, err)
				if !errors.Is(err, engine.ErrAccessDenied) || !strings.Contains(err.Error(), "key "+tc.wantKey+" ") ||
					!strings.Contains(err.Error(), b.Addr) {
					t.Errorf("%s: error %v, want access denied naming key %s and server %s", what, err, tc.wantKey, b.Addr)
				}
			}
		})
	}
}
