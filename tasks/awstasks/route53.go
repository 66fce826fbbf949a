package awstasks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// Route53 keeps the records of one public hosted zone in Route53. It is a dnstasks.Provider.
//
// The hosted zone is found by its name once (ListHostedZonesByName): there must be exactly one public zone of
// that name. Its records are listed once per run (ListResourceRecordSets, every page) into a cache that Get,
// List and Delete read and that the provider's own changes keep current; NewRun forgets it, so that the next
// run reads the zone again. Changes that arrive together (the engine runs DNS tasks concurrently) go to Route53
// in one ChangeResourceRecordSets batch: the first waits a moment (batchWindow) for the others, sends the batch,
// and every caller gets its result once Route53 says the change is INSYNC (GetChange). A batch Route53 refuses
// as a whole is sent again one change at a time, so that one bad change fails alone.
//
// Only simple record sets of the types dnstasks manages (A, AAAA, CNAME, TXT) are listed: alias records and
// record sets with a routing policy (a set identifier) are left out, and left alone. TXT values are quoted on
// the wire, and unquoted in a RecordSet.
type Route53 struct {
	client *route53.Client
	zone   string // canonical: "example.com"

	// batchWindow is how long the first change of a batch waits for others, unless batchMax changes come
	// sooner; pollFirst and pollMax bound the backoff of GetChange polls.
	batchWindow        time.Duration
	batchMax           int
	pollFirst, pollMax time.Duration

	zoneMu sync.Mutex // serialises the lookup of the zone
	zoneID string     // "Z...", once found

	mu      sync.Mutex // guards what follows
	gen     int        // counts runs: a listing or change of a former run does not fill the cache
	records map[rrsetKey]dnstasks.RecordSet
	listing *r53Listing
	pending *r53Batch
}

var _ dnstasks.Provider = (*Route53)(nil)

// rrsetKey identifies a record set in the zone.
type rrsetKey struct{ name, rrtype string }

// r53Listing is a listing of the zone under way: callers that need it meanwhile wait for done.
type r53Listing struct {
	done chan struct{}
	err  error
}

// r53Change is one change of a batch.
type r53Change struct {
	action types.ChangeAction
	rs     dnstasks.RecordSet
}

// r53Batch is the changes sent together: the first caller sends it, the others wait for done and read their
// error by their index.
type r53Batch struct {
	changes []r53Change
	errs    []error
	full    chan struct{} // closed when the batch holds batchMax changes
	done    chan struct{}
}

// maxBatch is how many changes one ChangeResourceRecordSets carries at most (Route53 takes 1000).
const maxBatch = 500

// NewRoute53 returns the provider of the public hosted zone named zone ("example.com"). Nothing is asked of
// Route53 yet.
func NewRoute53(client *route53.Client, zone string) *Route53 {
	return &Route53{
		client:      client,
		zone:        dnstasks.CanonicalName(zone),
		batchWindow: 20 * time.Millisecond,
		batchMax:    maxBatch,
		pollFirst:   500 * time.Millisecond,
		pollMax:     10 * time.Second,
	}
}

// Zone returns the zone's name, canonical: "example.com".
func (r *Route53) Zone() string { return r.zone }

// NewRun forgets the records read or changed so far: the next call lists the zone again. The hosted zone's id
// is kept.
func (r *Route53) NewRun() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.records = nil
}

// hostedZone returns the id of the public hosted zone named r.zone, found once.
func (r *Route53) hostedZone(ctx context.Context) (string, error) {
	r.zoneMu.Lock()
	defer r.zoneMu.Unlock()
	if r.zoneID != "" {
		return r.zoneID, nil
	}
	if err := dnstasks.ValidateName(r.zone); err != nil {
		return "", engine.Terminal(fmt.Errorf("Route53 hosted zone: %w", err))
	}
	var public, private []string
	in := &route53.ListHostedZonesByNameInput{DNSName: aws.String(r.zone + ".")}
	for {
		out, err := r.client.ListHostedZonesByName(ctx, in)
		if err != nil {
			return "", Classify("finding the Route53 hosted zone "+r.zone, err)
		}
		past := false
		for _, z := range out.HostedZones {
			if fromWire(aws.ToString(z.Name)) != r.zone {
				past = true // zones come sorted by name: the others are past it
				continue
			}
			id := strings.TrimPrefix(aws.ToString(z.Id), "/hostedzone/")
			if z.Config != nil && z.Config.PrivateZone {
				private = append(private, id)
			} else {
				public = append(public, id)
			}
		}
		if past || !out.IsTruncated || fromWire(aws.ToString(out.NextDNSName)) != r.zone {
			break
		}
		in.DNSName, in.HostedZoneId = out.NextDNSName, out.NextHostedZoneId
	}
	switch {
	case len(public) == 0 && len(private) > 0:
		return "", engine.Terminal(fmt.Errorf("Route53 has no public hosted zone %s, only private ones (%s): kubeup publishes in a public zone; create one (aws route53 create-hosted-zone --name %s --caller-reference ...)",
			r.zone, strings.Join(private, ", "), r.zone))
	case len(public) == 0:
		return "", engine.Terminal(fmt.Errorf("Route53 has no hosted zone %s: create it (aws route53 create-hosted-zone --name %s --caller-reference ...), or name another spec.dnsZone",
			r.zone, r.zone))
	case len(public) > 1:
		return "", engine.Terminal(fmt.Errorf("Route53 has %d public hosted zones named %s (%s): kubeup cannot tell which one the world sees; delete the ones the domain's registrar does not delegate to",
			len(public), r.zone, strings.Join(public, ", ")))
	}
	r.zoneID = public[0]
	return r.zoneID, nil
}

// check canonicalises and validates a record's name and type, and refuses a name outside the zone.
func (r *Route53) check(name, rrtype string) (string, error) {
	name = dnstasks.CanonicalName(name)
	if err := dnstasks.ValidateName(name); err != nil {
		return "", engine.Terminal(fmt.Errorf("DNS record name: %w", err))
	}
	if !dnstasks.Supported(rrtype) {
		return "", engine.Terminal(fmt.Errorf("DNS record %s: type %q is not one kubeup manages (A, AAAA, CNAME, TXT)", name, rrtype))
	}
	if !dnstasks.InZone(name, r.zone) {
		return "", engine.Terminal(fmt.Errorf("DNS record %s: %w %s (Route53): use a name that ends in .%s, or another zone",
			name, dnstasks.ErrOutsideZone, r.zone, r.zone))
	}
	return name, nil
}

// load lists the zone's records into the cache unless this run did already. Concurrent callers share one
// listing.
func (r *Route53) load(ctx context.Context) error {
	for {
		r.mu.Lock()
		if r.records != nil {
			r.mu.Unlock()
			return nil
		}
		if l := r.listing; l != nil {
			r.mu.Unlock()
			select {
			case <-l.done:
				if l.err != nil {
					return l.err
				}
				continue // listed: read the cache (or list again, after a NewRun meanwhile)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		l := &r53Listing{done: make(chan struct{})}
		r.listing = l
		gen := r.gen
		r.mu.Unlock()

		records, err := r.list(ctx)
		r.mu.Lock()
		r.listing = nil
		if err == nil && gen == r.gen {
			r.records = records
		}
		l.err = err
		close(l.done)
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// list reads every page of the zone's record sets, keeping the simple ones of the managed types.
func (r *Route53) list(ctx context.Context) (map[rrsetKey]dnstasks.RecordSet, error) {
	id, err := r.hostedZone(ctx)
	if err != nil {
		return nil, err
	}
	records := map[rrsetKey]dnstasks.RecordSet{}
	p := route53.NewListResourceRecordSetsPaginator(r.client, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(id)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, Classify(fmt.Sprintf("listing the records of Route53 hosted zone %s (%s)", r.zone, id), err)
		}
		for _, w := range out.ResourceRecordSets {
			rs, ok := fromRecordSet(w)
			if ok {
				records[rrsetKey{rs.Name, rs.Type}] = rs
			}
		}
	}
	return records, nil
}

// Get returns the record set of name and type from this run's listing of the zone; nil, nil when there is none.
func (r *Route53) Get(ctx context.Context, name, rrtype string) (*dnstasks.RecordSet, error) {
	name, err := r.check(name, rrtype)
	if err != nil {
		return nil, err
	}
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rs, ok := r.records[rrsetKey{name, rrtype}]
	if !ok {
		return nil, nil
	}
	rs.Values = slices.Clone(rs.Values)
	return &rs, nil
}

// List returns the zone's record sets of the managed types, sorted by name then type.
func (r *Route53) List(ctx context.Context) ([]dnstasks.RecordSet, error) {
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sets := make([]dnstasks.RecordSet, 0, len(r.records))
	for _, k := range slices.SortedFunc(maps.Keys(r.records), compareKeys) {
		rs := r.records[k]
		rs.Values = slices.Clone(rs.Values)
		sets = append(sets, rs)
	}
	return sets, nil
}

func compareKeys(a, b rrsetKey) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return strings.Compare(a.rrtype, b.rrtype)
}

// Upsert creates or replaces the record set of rs's name and type (an UPSERT), in the batch of the changes that
// arrive with it, and returns once Route53 has it in sync.
func (r *Route53) Upsert(ctx context.Context, rs dnstasks.RecordSet) error {
	if err := rs.Validate(); err != nil {
		return engine.Terminal(fmt.Errorf("Route53 hosted zone %s: %w", r.zone, err))
	}
	if _, err := r.check(rs.Name, rs.Type); err != nil {
		return err
	}
	rs.Values = slices.Clone(rs.Values)
	return r.submit(ctx, r53Change{action: types.ChangeActionUpsert, rs: rs})
}

// Delete removes the record set of name and type: a DELETE of the set as this run's listing has it. An absent
// one is not an error. A set that changed since the listing makes Route53 refuse the DELETE: the listing is
// forgotten and the error is retryable, so that the engine's next try deletes what is there.
func (r *Route53) Delete(ctx context.Context, name, rrtype string) error {
	name, err := r.check(name, rrtype)
	if err != nil {
		return err
	}
	cur, err := r.Get(ctx, name, rrtype)
	if err != nil || cur == nil {
		return err
	}
	err = r.submit(ctx, r53Change{action: types.ChangeActionDelete, rs: *cur})
	if err != nil && ErrorCode(err) == "InvalidChangeBatch" {
		r.NewRun()
		return engine.Retryable(fmt.Errorf("%w (the record set may have changed since it was listed: it is listed again)", err))
	}
	return err
}

// submit adds c to the batch being collected (or starts one, and sends it after batchWindow), and returns c's
// result once the batch is sent and in sync.
func (r *Route53) submit(ctx context.Context, c r53Change) error {
	r.mu.Lock()
	b := r.pending
	if b != nil && slices.ContainsFunc(b.changes, func(o r53Change) bool { return o.rs.Name == c.rs.Name && o.rs.Type == c.rs.Type }) {
		b = nil // Route53 refuses two changes of one record set in a batch: this one goes in the next
	}
	first := b == nil
	if first {
		b = &r53Batch{full: make(chan struct{}), done: make(chan struct{})}
		r.pending = b
	}
	i := len(b.changes)
	b.changes = append(b.changes, c)
	if len(b.changes) >= r.batchMax && r.pending == b {
		r.pending = nil // full: sent at once, and the next change starts another
		close(b.full)
	}
	r.mu.Unlock()

	if !first {
		select {
		case <-b.done:
			return b.errs[i]
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t := time.NewTimer(r.batchWindow)
	select {
	case <-t.C:
	case <-b.full:
	case <-ctx.Done():
	}
	t.Stop()
	r.mu.Lock()
	if r.pending == b {
		r.pending = nil
	}
	r.mu.Unlock()
	r.send(ctx, b)
	close(b.done)
	return b.errs[i]
}

// send sends the batch and waits for it to be in sync, and sets each change's error. A batch Route53 refuses
// for one of its changes (not throttling nor a server error, which the whole batch shares) is sent again one
// change at a time.
func (r *Route53) send(ctx context.Context, b *r53Batch) {
	b.errs = make([]error, len(b.changes))
	err := r.change(ctx, b.changes)
	if err != nil && len(b.changes) > 1 && engine.ClassOf(err) == engine.ClassTerminal && ctx.Err() == nil {
		var wg sync.WaitGroup
		for i := range b.changes {
			wg.Go(func() { b.errs[i] = r.change(ctx, b.changes[i:i+1]) })
		}
		wg.Wait()
		return
	}
	for i := range b.errs {
		b.errs[i] = err
	}
}

// change sends one ChangeResourceRecordSets of changes, records them in the cache, and waits until Route53 says
// they are in sync.
func (r *Route53) change(ctx context.Context, changes []r53Change) error {
	id, err := r.hostedZone(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	gen := r.gen
	r.mu.Unlock()
	var what []string
	batch := &types.ChangeBatch{Comment: aws.String("kubeup")}
	for _, c := range changes {
		what = append(what, fmt.Sprintf("%s %s %s", strings.ToLower(string(c.action)), c.rs.Name, c.rs.Type))
		batch.Changes = append(batch.Changes, types.Change{Action: c.action, ResourceRecordSet: toRecordSet(c.rs)})
	}
	doing := fmt.Sprintf("Route53 hosted zone %s (%s): %s", r.zone, id, strings.Join(what, ", "))
	out, err := r.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(id), ChangeBatch: batch})
	if err != nil {
		return Classify(doing, err)
	}
	r.mu.Lock()
	if r.records != nil && gen == r.gen {
		for _, c := range changes {
			k := rrsetKey{c.rs.Name, c.rs.Type}
			if c.action == types.ChangeActionDelete {
				delete(r.records, k)
			} else {
				r.records[k] = c.rs
			}
		}
	}
	r.mu.Unlock()
	if out.ChangeInfo == nil || out.ChangeInfo.Status == types.ChangeStatusInsync {
		return nil
	}
	return r.waitInSync(ctx, aws.ToString(out.ChangeInfo.Id), doing)
}

// waitInSync polls GetChange, backing off, until the change is INSYNC or ctx ends.
func (r *Route53) waitInSync(ctx context.Context, changeID, doing string) error {
	delay := r.pollFirst
	for {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: waiting for change %s to be in sync: %w", doing, changeID, ctx.Err())
		case <-t.C:
		}
		out, err := r.client.GetChange(ctx, &route53.GetChangeInput{Id: aws.String(changeID)})
		if err != nil {
			return Classify(fmt.Sprintf("%s: waiting for change %s to be in sync", doing, changeID), err)
		}
		if out.ChangeInfo != nil && out.ChangeInfo.Status == types.ChangeStatusInsync {
			return nil
		}
		delay = min(delay*2, r.pollMax)
	}
}

// toRecordSet is rs as Route53 takes it: an absolute name, TXT values quoted.
func toRecordSet(rs dnstasks.RecordSet) *types.ResourceRecordSet {
	w := &types.ResourceRecordSet{Name: aws.String(rs.Name + "."), Type: types.RRType(rs.Type), TTL: aws.Int64(int64(rs.TTL))}
	for _, v := range rs.Values {
		if rs.Type == dnstasks.TypeTXT {
			v = quoteTXT(v)
		}
		w.ResourceRecords = append(w.ResourceRecords, types.ResourceRecord{Value: aws.String(v)})
	}
	return w
}

// fromRecordSet is a record set as Route53 lists it, in dnstasks' canonical form; false for what the provider
// does not manage (another type, an alias, a routing policy).
func fromRecordSet(w types.ResourceRecordSet) (dnstasks.RecordSet, bool) {
	rrtype := string(w.Type)
	if !dnstasks.Supported(rrtype) || w.AliasTarget != nil || w.SetIdentifier != nil || len(w.ResourceRecords) == 0 {
		return dnstasks.RecordSet{}, false
	}
	rs := dnstasks.RecordSet{Name: fromWire(aws.ToString(w.Name)), Type: rrtype, TTL: int(aws.ToInt64(w.TTL))}
	for _, rr := range w.ResourceRecords {
		v := aws.ToString(rr.Value)
		if rrtype == dnstasks.TypeTXT {
			v = unquoteTXT(v)
		} else if c, err := dnstasks.CanonicalValue(rrtype, v); err == nil {
			v = c
		}
		rs.Values = append(rs.Values, v)
	}
	slices.Sort(rs.Values)
	rs.Values = slices.Compact(rs.Values)
	return rs, true
}

// fromWire is a name as Route53 writes it ("\052.example.com.") in canonical form ("*.example.com").
func fromWire(name string) string {
	return dnstasks.CanonicalName(unescapeOctal(name))
}

// unescapeOctal replaces Route53's escapes of special characters, a backslash and three octal digits ("\052"
// for "*"), with the characters.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// txtChunk is the longest character string of a TXT record (RFC 1035): a longer value is several strings.
const txtChunk = 255

// quoteTXT writes a TXT value as Route53 takes it: one or more quoted strings of at most 255 bytes, with '"' and
// '\' escaped.
func quoteTXT(v string) string {
	var parts []string
	for {
		chunk := v
		if len(chunk) > txtChunk {
			chunk = chunk[:txtChunk]
		}
		v = v[len(chunk):]
		var b strings.Builder
		b.WriteByte('"')
		for i := 0; i < len(chunk); i++ {
			if c := chunk[i]; c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(chunk[i])
		}
		b.WriteByte('"')
		parts = append(parts, b.String())
		if v == "" {
			break
		}
	}
	return strings.Join(parts, " ")
}

// unquoteTXT reads a TXT value as Route53 writes it: quoted strings, concatenated, their escapes ("\"", "\\",
// "\052") undone. Text outside quotes is taken as is.
func unquoteTXT(w string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c == '"':
			in = !in
		case c == '\\' && i+1 < len(w):
			if i+4 <= len(w) {
				if n, err := strconv.ParseUint(w[i+1:i+4], 8, 8); err == nil {
					b.WriteByte(byte(n))
					i += 3
					continue
				}
			}
			i++
			b.WriteByte(w[i])
		case !in && (c == ' ' || c == '\t'):
			// between two strings
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
