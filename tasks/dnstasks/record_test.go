package dnstasks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// memDNS is an in-memory Provider for one zone. The local provider's zone file is tested against this package's
// tasks in localtasks.
type memDNS struct {
	zone string
	mu   sync.Mutex
	sets map[string]RecordSet // by name + " " + type
	err  error                // returned by every call when set
}

type memWorld struct{ dns *memDNS }

func (w *memWorld) DNSProvider() Provider { return w.dns }

func newMemWorld() *memWorld {
	return &memWorld{dns: &memDNS{zone: "example.com", sets: map[string]RecordSet{}}}
}

func (m *memDNS) check(name string) error {
	if m.err != nil {
		return m.err
	}
	if !InZone(name, m.zone) {
		return fmt.Errorf("%s: %w %s", name, ErrOutsideZone, m.zone)
	}
	return nil
}

func (m *memDNS) Get(ctx context.Context, name, rrtype string) (*RecordSet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(name); err != nil {
		return nil, err
	}
	rs, ok := m.sets[name+" "+rrtype]
	if !ok {
		return nil, nil
	}
	rs.Values = slices.Clone(rs.Values)
	return &rs, nil
}

func (m *memDNS) Upsert(ctx context.Context, rs RecordSet) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(rs.Name); err != nil {
		return err
	}
	if err := rs.Validate(); err != nil {
		return err
	}
	rs.Values = slices.Clone(rs.Values)
	m.sets[rs.Name+" "+rs.Type] = rs
	return nil
}

func (m *memDNS) Delete(ctx context.Context, name, rrtype string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sets, name+" "+rrtype)
	return m.err
}

func (m *memDNS) List(ctx context.Context) ([]RecordSet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []RecordSet
	for _, k := range slices.Sorted(maps.Keys(m.sets)) {
		out = append(out, m.sets[k])
	}
	return out, m.err
}

func ptr[T any](v T) *T { return &v }

func records() *engine.Graph[*memWorld] {
	g := engine.NewGraph[*memWorld]()
	engine.Add(g, &Record[*memWorld]{Name: "api.demo.example.com", Type: "A", Values: []string{"10.0.0.2", "10.0.0.1"}})
	engine.Add(g, &Record[*memWorld]{Name: "api.demo.example.com", Type: "AAAA", TTL: ptr(300), Values: []string{"2001:db8::1"}})
	engine.Add(g, &Record[*memWorld]{Name: "www.example.com", Type: "CNAME", Values: []string{"lb.example.net"}})
	engine.Add(g, &Record[*memWorld]{Name: "demo.example.com", Type: "TXT", Values: []string{`heritage="kubeup"`}})
	engine.Add(g, &Record[*memWorld]{Name: "api.internal.demo.example.com", Type: "A",
		Values: []string{"203.0.113.123"}, Placeholder: true})
	return g
}

func TestRecordApplyThenNoChanges(t *testing.T) {
	w := newMemWorld()
	enginetest.ApplyThenNoChanges(t, context.Background(), w, records)
	got, err := w.dns.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []RecordSet{
		{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1", "10.0.0.2"}},
		{Name: "api.demo.example.com", Type: "AAAA", TTL: 300, Values: []string{"2001:db8::1"}},
		{Name: "api.internal.demo.example.com", Type: "A", TTL: 60, Values: []string{"203.0.113.123"}},
		{Name: "demo.example.com", Type: "TXT", TTL: 60, Values: []string{`heritage="kubeup"`}},
		{Name: "www.example.com", Type: "CNAME", TTL: 60, Values: []string{"lb.example.net"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// Once a placeholder exists, what someone else wrote there stays; a record that is not a placeholder is put
// back.
func TestRecordPlaceholderNotOverwritten(t *testing.T) {
	ctx := context.Background()
	w := newMemWorld()
	enginetest.ApplyThenNoChanges(t, ctx, w, records)
	published := RecordSet{Name: "api.internal.demo.example.com", Type: "A", TTL: 30, Values: []string{"10.1.0.5", "10.1.0.6"}}
	if err := w.dns.Upsert(ctx, published); err != nil {
		t.Fatal(err)
	}
	drifted := RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.9.9.9"}}
	if err := w.dns.Upsert(ctx, drifted); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(ctx, records(), w, engine.Options{Target: engine.Apply})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range res.Plan.Changes {
		keys = append(keys, c.Key.String())
	}
	if diff := cmp.Diff([]string{"DNSRecord/api.demo.example.com/A"}, keys); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	got, _ := w.dns.Get(ctx, published.Name, published.Type)
	if diff := cmp.Diff(&published, got); diff != "" {
		t.Errorf("placeholder (-want +got):\n%s", diff)
	}
}

func TestRecordFind(t *testing.T) {
	ctx := context.Background()
	w := newMemWorld()
	if err := w.dns.Upsert(ctx, RecordSet{Name: "api.example.com", Type: "A", TTL: 90, Values: []string{"10.0.0.1", "10.0.0.2"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		task *Record[*memWorld]
		want *Record[*memWorld]
	}{
		{name: "absent", task: &Record[*memWorld]{Name: "www.example.com", Type: "A"}},
		{name: "invalid name cannot exist", task: &Record[*memWorld]{Name: "API.example.com", Type: "A"}},
		{name: "unsupported type cannot exist", task: &Record[*memWorld]{Name: "api.example.com", Type: "MX"}},
		{name: "present", task: &Record[*memWorld]{Name: "api.example.com", Type: "A"},
			want: &Record[*memWorld]{Name: "api.example.com", Type: "A", TTL: ptr(90), Values: []string{"10.0.0.1", "10.0.0.2"}}},
		{name: "placeholder reports the task's values",
			task: &Record[*memWorld]{Name: "api.example.com", Type: "A", TTL: ptr(60), Values: []string{"203.0.113.123"}, Placeholder: true},
			want: &Record[*memWorld]{Name: "api.example.com", Type: "A", TTL: ptr(60), Values: []string{"203.0.113.123"}, Placeholder: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.task.Find(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordCheckChanges(t *testing.T) {
	tests := []struct {
		name    string
		task    Record[*memWorld]
		wantErr string
	}{
		{name: "valid", task: Record[*memWorld]{Name: "api.example.com", Type: "A", Values: []string{"10.0.0.2", "10.0.0.1"}}},
		{name: "name not canonical", task: Record[*memWorld]{Name: "api.example.com.", Type: "A", Values: []string{"10.0.0.1"}},
			wantErr: `field Name: "api.example.com." is not in canonical form: write "api.example.com"`},
		{name: "type not canonical", task: Record[*memWorld]{Name: "api.example.com", Type: "aaaa", Values: []string{"::1"}},
			wantErr: `field Type: "aaaa" is not in canonical form: write "AAAA"`},
		{name: "unsupported type", task: Record[*memWorld]{Name: "api.example.com", Type: "MX", Values: []string{"x"}},
			wantErr: `field Type: "MX" is not a supported record type: use one of A, AAAA, CNAME, TXT`},
		{name: "TTL", task: Record[*memWorld]{Name: "api.example.com", Type: "A", TTL: ptr(-5), Values: []string{"10.0.0.1"}},
			wantErr: "field TTL: -5 is not between 0 and"},
		{name: "no values", task: Record[*memWorld]{Name: "api.example.com", Type: "A"},
			wantErr: "field Values of api.example.com A: at least one value is required"},
		{name: "IPv6 in A", task: Record[*memWorld]{Name: "api.example.com", Type: "A", Values: []string{"2001:db8::1"}},
			wantErr: `field Values of api.example.com A: "2001:db8::1" is not an IPv4 address`},
		{name: "IPv4 in AAAA", task: Record[*memWorld]{Name: "api.example.com", Type: "AAAA", Values: []string{"10.0.0.1"}},
			wantErr: "not an IPv6 address"},
		{name: "address not canonical", task: Record[*memWorld]{Name: "api.example.com", Type: "AAAA", Values: []string{"2001:0db8::1"}},
			wantErr: `"2001:0db8::1" is not in canonical form: write "2001:db8::1"`},
		{name: "CNAME target", task: Record[*memWorld]{Name: "api.example.com", Type: "CNAME", Values: []string{"lb.example.net."}},
			wantErr: `write "lb.example.net"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &tt.task
			checkErr(t, "CheckChanges", r.CheckChanges(nil, r, r), tt.wantErr)
		})
	}
}

// A provider's error keeps its class through the task's wrapping.
func TestRecordErrorsKeepTheirClass(t *testing.T) {
	ctx := context.Background()
	for _, class := range []engine.Class{engine.ClassRetryable, engine.ClassNotReady, engine.ClassTerminal} {
		t.Run(class.String(), func(t *testing.T) {
			w := newMemWorld()
			w.dns.err = &engine.ClassError{Class: class, Err: errors.New("boom")}
			r := &Record[*memWorld]{Name: "api.example.com", Type: "A", Values: []string{"10.0.0.1"}}
			_, err := r.Find(ctx, w)
			if engine.ClassOf(err) != class {
				t.Errorf("Find: %v has class %v, want %v", err, engine.ClassOf(err), class)
			}
			err = r.Render(ctx, w, nil, r, r)
			if engine.ClassOf(err) != class {
				t.Errorf("Render: %v has class %v, want %v", err, engine.ClassOf(err), class)
			}
		})
	}
	w := newMemWorld()
	_, err := (&Record[*memWorld]{Name: "api.example.org", Type: "A"}).Find(ctx, w)
	if !errors.Is(err, ErrOutsideZone) {
		t.Errorf("Find outside the zone: %v, want ErrOutsideZone", err)
	}
}

func TestRecordKey(t *testing.T) {
	r := &Record[*memWorld]{Name: "api.demo.example.com", Type: "A"}
	if got, want := r.Key().String(), "DNSRecord/api.demo.example.com/A"; got != want {
		t.Errorf("Key = %s, want %s", got, want)
	}
}

func TestDeps(t *testing.T) {
	enginetest.CheckDeps(t, &Record[*memWorld]{Name: "api.example.com", Type: "A", Values: []string{"10.0.0.1"}})
}

// A provider that returns names and values as DNS APIs often do (a trailing dot, upper case, unsorted) still
// compares equal.
func TestRecordFindNormalises(t *testing.T) {
	ctx := context.Background()
	w := newMemWorld()
	w.dns.sets["api.example.com AAAA"] = RecordSet{Name: "API.example.com.", Type: "AAAA", TTL: 60,
		Values: []string{"2001:DB8::2", "2001:db8::1", "2001:db8:0::2"}}
	got, err := (&Record[*memWorld]{Name: "api.example.com", Type: "AAAA"}).Find(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	want := &Record[*memWorld]{Name: "api.example.com", Type: "AAAA", TTL: ptr(60), Values: []string{"2001:db8::1", "2001:db8::2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
}
