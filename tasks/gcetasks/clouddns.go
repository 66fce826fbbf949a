package gcetasks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/api/dns/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/sharedread"
)

// CloudDNS keeps the records of one Cloud DNS managed zone. It is a dnstasks.Provider.
//
// The managed zone is found by its DNS name once (managedZones.list filtered by dnsName): there must be exactly
// one public zone of that name. Its records are listed once per run (resourceRecordSets.list, every page) into a
// cache that Get, List and Delete read and that the provider's own changes keep current; NewRun forgets it.
// Changes that arrive together (the engine runs DNS tasks concurrently) go to Cloud DNS in one changes.create
// with their additions and deletions (a replaced record set is a deletion of the old one and an addition of the
// new): the first waits a moment (batchWindow) for the others, sends the batch, and every caller gets its result
// once Cloud DNS says the change is done (changes.get).
type CloudDNS struct {
	svc     *dns.Service
	project string
	zone    string // canonical: "example.com"

	batchWindow        time.Duration
	pollFirst, pollMax time.Duration

	zoneRead sharedread.Shared[string] // the managed zone's name, once found
	records  sharedread.Shared[map[rrsetKey]*dns.ResourceRecordSet]

	mu      sync.Mutex // guards the cache's contents and pending
	pending *dnsBatch
}

var _ dnstasks.Provider = (*CloudDNS)(nil)

// rrsetKey identifies a record set in the zone.
type rrsetKey struct{ name, rrtype string }

// dnsBatch is the changes sent together: the first caller sends it, the others wait for done.
type dnsBatch struct {
	changes []dnsChange
	done    chan struct{}
	err     error
}

// dnsChange is one record set to write (rs) or delete (rs nil) at key.
type dnsChange struct {
	key rrsetKey
	rs  *dnstasks.RecordSet
}

// NewCloudDNS returns the provider of the managed zone of project whose DNS name is zone ("example.com").
// Nothing is asked of Cloud DNS yet.
func NewCloudDNS(svc *dns.Service, project, zone string) *CloudDNS {
	return &CloudDNS{
		svc: svc, project: project, zone: dnstasks.CanonicalName(zone),
		batchWindow: 20 * time.Millisecond, pollFirst: 50 * time.Millisecond, pollMax: 2 * time.Second,
	}
}

// Zone returns the zone's DNS name.
func (r *CloudDNS) Zone() string { return r.zone }

// NewRun forgets the records read: the next call reads the zone again.
func (r *CloudDNS) NewRun() { r.records.Forget() }

// managedZone returns the name of the managed zone, found once.
func (r *CloudDNS) managedZone(ctx context.Context) (string, error) {
	return r.zoneRead.Get(ctx, func(ctx context.Context) (string, error) {
		var found []string
		err := r.svc.ManagedZones.List(r.project).DnsName(r.zone+".").Pages(ctx, func(l *dns.ManagedZonesListResponse) error {
			for _, z := range l.ManagedZones {
				if dnstasks.CanonicalName(z.DnsName) == r.zone && z.Visibility != "private" {
					found = append(found, z.Name)
				}
			}
			return nil
		})
		if err != nil {
			return "", Classify("finding the Cloud DNS zone "+r.zone, err)
		}
		switch len(found) {
		case 0:
			return "", engine.Terminal(fmt.Errorf("no public Cloud DNS managed zone of project %s has the DNS name %s.: create it, or "+
				"name an existing zone in spec.dnsZone", r.project, r.zone))
		case 1:
			return found[0], nil
		}
		return "", engine.Terminal(fmt.Errorf("%d public Cloud DNS managed zones of project %s have the DNS name %s. (%s): kubeup cannot "+
			"tell which one to use; delete the others", len(found), r.project, r.zone, strings.Join(found, ", ")))
	})
}

// list returns the zone's record sets of the supported types by key: one listing per run.
func (r *CloudDNS) list(ctx context.Context) (map[rrsetKey]*dns.ResourceRecordSet, error) {
	zone, err := r.managedZone(ctx)
	if err != nil {
		return nil, err
	}
	return r.records.Get(ctx, func(ctx context.Context) (map[rrsetKey]*dns.ResourceRecordSet, error) {
		out := map[rrsetKey]*dns.ResourceRecordSet{}
		err := r.svc.ResourceRecordSets.List(r.project, zone).Pages(ctx, func(l *dns.ResourceRecordSetsListResponse) error {
			for _, rs := range l.Rrsets {
				if dnstasks.Supported(rs.Type) {
					out[rrsetKey{dnstasks.CanonicalName(rs.Name), rs.Type}] = rs
				}
			}
			return nil
		})
		if err != nil {
			return nil, Classify("listing the records of Cloud DNS zone "+r.zone, err)
		}
		return out, nil
	})
}

func (r *CloudDNS) check(name, rrtype string) (rrsetKey, error) {
	name = dnstasks.CanonicalName(name)
	if !dnstasks.InZone(name, r.zone) {
		return rrsetKey{}, engine.Terminal(fmt.Errorf("%s: %w %s", name, dnstasks.ErrOutsideZone, r.zone))
	}
	return rrsetKey{name, rrtype}, nil
}

// fromWire is a record set as dnstasks states it: TXT values unquoted, names canonical, values sorted.
func fromWire(rs *dns.ResourceRecordSet) dnstasks.RecordSet {
	out := dnstasks.RecordSet{Name: dnstasks.CanonicalName(rs.Name), Type: rs.Type, TTL: int(rs.Ttl)}
	for _, v := range rs.Rrdatas {
		if rs.Type == "TXT" {
			v = strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(v, `"`), `"`), `\"`, `"`)
		} else if c, err := dnstasks.CanonicalValue(rs.Type, v); err == nil {
			v = c
		}
		out.Values = append(out.Values, v)
	}
	slices.Sort(out.Values)
	out.Values = slices.Compact(out.Values)
	return out
}

// toWire is rs as Cloud DNS takes it: names with the trailing dot, TXT values quoted.
func toWire(rs dnstasks.RecordSet) *dns.ResourceRecordSet {
	w := &dns.ResourceRecordSet{Name: rs.Name + ".", Type: rs.Type, Ttl: int64(rs.TTL)}
	for _, v := range rs.Values {
		switch rs.Type {
		case "TXT":
			v = `"` + strings.ReplaceAll(v, `"`, `\"`) + `"`
		case "CNAME":
			v = strings.TrimSuffix(v, ".") + "."
		}
		w.Rrdatas = append(w.Rrdatas, v)
	}
	return w
}

// Get returns the record set of name and type, or nil.
func (r *CloudDNS) Get(ctx context.Context, name, rrtype string) (*dnstasks.RecordSet, error) {
	k, err := r.check(name, rrtype)
	if err != nil {
		return nil, err
	}
	all, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := all[k]; w != nil {
		rs := fromWire(w)
		return &rs, nil
	}
	return nil, nil
}

// List returns every record set of the supported types in the zone, sorted by name then type.
func (r *CloudDNS) List(ctx context.Context) ([]dnstasks.RecordSet, error) {
	all, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]dnstasks.RecordSet, 0, len(all))
	for _, k := range slices.SortedFunc(maps.Keys(all), func(a, b rrsetKey) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.rrtype, b.rrtype)
	}) {
		out = append(out, fromWire(all[k]))
	}
	return out, nil
}

// Upsert writes rs, in a batch with the changes that arrive with it.
func (r *CloudDNS) Upsert(ctx context.Context, rs dnstasks.RecordSet) error {
	if err := rs.Validate(); err != nil {
		return engine.Terminal(err)
	}
	k, err := r.check(rs.Name, rs.Type)
	if err != nil {
		return err
	}
	return r.submit(ctx, []dnsChange{{key: k, rs: &rs}})
}

// Delete removes the record set of name and type; an absent one is not an error.
func (r *CloudDNS) Delete(ctx context.Context, name, rrtype string) error {
	k, err := r.check(name, rrtype)
	if err != nil {
		return err
	}
	return r.submit(ctx, []dnsChange{{key: k}})
}

// submit adds changes to the batch being gathered (or starts one), and returns the batch's result.
func (r *CloudDNS) submit(ctx context.Context, changes []dnsChange) error {
	if _, err := r.list(ctx); err != nil { // a deletion needs the record set as it is
		return err
	}
	r.mu.Lock()
	b := r.pending
	first := b == nil
	if first {
		b = &dnsBatch{done: make(chan struct{})}
		r.pending = b
	}
	b.changes = append(b.changes, changes...)
	r.mu.Unlock()
	if first {
		select {
		case <-time.After(r.batchWindow):
		case <-ctx.Done():
		}
		r.mu.Lock()
		r.pending = nil
		r.mu.Unlock()
		b.err = r.send(ctx, b.changes)
		close(b.done)
		return b.err
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send makes one changes.create of changes against the records read, waits until it is done, and keeps the
// cache current. Nothing to change sends nothing.
func (r *CloudDNS) send(ctx context.Context, changes []dnsChange) error {
	zone, err := r.managedZone(ctx)
	if err != nil {
		return err
	}
	all, err := r.list(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	want := map[rrsetKey]*dns.ResourceRecordSet{} // the last change of each key wins
	var order []rrsetKey
	for _, c := range changes {
		if _, ok := want[c.key]; !ok {
			order = append(order, c.key)
		}
		want[c.key] = nil
		if c.rs != nil {
			want[c.key] = toWire(*c.rs)
		}
	}
	ch := &dns.Change{}
	for _, k := range order {
		old, w := all[k], want[k]
		if old != nil && w != nil && fromWireEqual(old, w) {
			continue
		}
		if old != nil {
			ch.Deletions = append(ch.Deletions, old)
		}
		if w != nil {
			ch.Additions = append(ch.Additions, w)
		}
	}
	r.mu.Unlock()
	if len(ch.Additions) == 0 && len(ch.Deletions) == 0 {
		return nil
	}
	doing := fmt.Sprintf("changing %d record sets of Cloud DNS zone %s", len(ch.Additions)+len(ch.Deletions), r.zone)
	out, err := r.svc.Changes.Create(r.project, zone, ch).Context(ctx).Do()
	if err != nil {
		r.records.Forget() // the zone may differ from what was read: read it again on the retry
		if httpCode(err) == 409 || httpCode(err) == 412 {
			return engine.NotReady(Classify(doing+" (the records changed since they were read)", err))
		}
		return Classify(doing, err)
	}
	pause := r.pollFirst
	for out.Status != "done" {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for change %s: %w", doing, out.Id, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, r.pollMax)
		if out, err = r.svc.Changes.Get(r.project, zone, out.Id).Context(ctx).Do(); err != nil {
			return Classify(doing+": reading the change's status", err)
		}
	}
	r.mu.Lock()
	for _, d := range ch.Deletions {
		delete(all, rrsetKey{dnstasks.CanonicalName(d.Name), d.Type})
	}
	for _, a := range ch.Additions {
		all[rrsetKey{dnstasks.CanonicalName(a.Name), a.Type}] = a
	}
	r.mu.Unlock()
	return nil
}

func fromWireEqual(a, b *dns.ResourceRecordSet) bool {
	x, y := fromWire(a), fromWire(b)
	return x.TTL == y.TTL && slices.Equal(x.Values, y.Values)
}
