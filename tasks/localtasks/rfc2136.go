package localtasks

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// RFC2136 keeps a zone's records on a DNS server that accepts dynamic updates (RFC 2136) signed with a TSIG key
// (RFC 8945): BIND's named with an update-policy or allow-update for the key, Knot, PowerDNS, or Windows DNS. It
// is a dnstasks.Provider.
//
// Every message goes over TCP, signed with the key, and the server's signed answers are verified. Get asks the
// server for the name and type, and takes only an authoritative answer; List transfers the zone (AXFR), so the
// server must allow the key to transfer it. Upsert is one UPDATE message that deletes the record set and adds the
// new records, which the server applies at once or not at all; Delete is an UPDATE that deletes the record set.
//
// Errors are classified for the engine: a server failure (SERVFAIL), a timeout or a server that cannot be reached
// is retryable; a refusal (REFUSED, NOTAUTH, or a TSIG key, secret or clock the server does not accept) is
// engine.ErrAccessDenied, with a message that names the key and the zone; a name outside the zone (NOTZONE, or
// caught before asking) is dnstasks.ErrOutsideZone.
//
// A server ignores an update that would give a name a CNAME and other records (RFC 2136, section 3.4.2.2) without
// saying so: Upsert reads the record set back, and reports such a silent refusal as an error.
type RFC2136 struct {
	server    string        // host:port
	zone      string        // canonical
	keyName   string        // fully qualified, lowercase: "kubeup."
	algorithm string        // as miekg/dns names it: dns.HmacSHA256
	secret    engine.Secret // base64; a Secret, so that the provider printed or logged never shows it
	timeout   time.Duration
}

var _ dnstasks.Provider = (*RFC2136)(nil)

// tsigAlgorithms are the TSIG algorithms RFC2136 signs with, by the name BIND's tsig-keygen and named.conf use.
var tsigAlgorithms = map[string]string{
	"hmac-md5":    dns.HmacMD5,
	"hmac-sha1":   dns.HmacSHA1,
	"hmac-sha224": dns.HmacSHA224,
	"hmac-sha256": dns.HmacSHA256,
	"hmac-sha384": dns.HmacSHA384,
	"hmac-sha512": dns.HmacSHA512,
}

// DefaultTSIGAlgorithm is the algorithm of a key given without one.
const DefaultTSIGAlgorithm = "hmac-sha256"

// rfc2136Timeout bounds each exchange with the server, when the context does not end it sooner.
const rfc2136Timeout = 10 * time.Second

// tsigFudge is the clock difference, in seconds, a signature tolerates (RFC 8945 recommends 300).
const tsigFudge = 300

// NewRFC2136 returns the provider of zone ("demo.example.com") on the DNS server server ("10.0.0.53",
// "ns1.example.com:5353", "[fd00::53]:53"; port 53 by default), whose updates and queries are signed with the
// TSIG key keyName, of algorithm ("hmac-sha256" when empty; hmac-sha1, -sha224, -sha384, -sha512 and hmac-md5 too)
// and base64 secret, as BIND's tsig-keygen prints them. Nothing is sent yet.
func NewRFC2136(server, zone, keyName, algorithm, secret string) (*RFC2136, error) {
	z := dnstasks.CanonicalName(zone)
	if err := dnstasks.ValidateName(z); err != nil {
		return nil, fmt.Errorf("DNS zone of the RFC 2136 server %s: %w", server, err)
	}
	addr, err := serverAddr(server)
	if err != nil {
		return nil, fmt.Errorf("DNS zone %s: RFC 2136 server: %w", z, err)
	}
	r := &RFC2136{server: addr, zone: z, timeout: rfc2136Timeout}
	if keyName == "" {
		return nil, fmt.Errorf("DNS zone %s on %s: the RFC 2136 provider needs the name of a TSIG key: updates must be signed (tsig-keygen makes a key)", z, addr)
	}
	r.keyName = dns.CanonicalName(keyName)
	if _, ok := dns.IsDomainName(r.keyName); !ok {
		return nil, fmt.Errorf("DNS zone %s on %s: TSIG key name %q is not a domain name", z, addr, keyName)
	}
	alg := strings.TrimSuffix(strings.ToLower(algorithm), ".")
	if alg == "" {
		alg = DefaultTSIGAlgorithm
	}
	if a, ok := tsigAlgorithms[alg]; ok {
		r.algorithm = a
	} else if alg+"." == dns.HmacMD5 {
		r.algorithm = dns.HmacMD5
	} else {
		names := make([]string, 0, len(tsigAlgorithms))
		for n := range tsigAlgorithms {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("DNS zone %s on %s: TSIG key %s: algorithm %q is not one of %s",
			z, addr, keyName, algorithm, strings.Join(names, ", "))
	}
	if secret == "" {
		return nil, fmt.Errorf("DNS zone %s on %s: TSIG key %s has no secret: give the base64 secret tsig-keygen printed", z, addr, keyName)
	}
	if _, err := base64.StdEncoding.DecodeString(secret); err != nil {
		return nil, fmt.Errorf("DNS zone %s on %s: the secret of TSIG key %s is not base64, as tsig-keygen prints it: %w", z, addr, keyName, err)
	}
	r.secret = engine.NewSecret(secret)
	return r, nil
}

// serverAddr returns server as host:port, with port 53 when it has none.
func serverAddr(server string) (string, error) {
	if server == "" {
		return "", errors.New("no server: give the address of the zone's primary server, as HOST or HOST:PORT")
	}
	if a, err := netip.ParseAddr(server); err == nil {
		return net.JoinHostPort(a.String(), "53"), nil
	}
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		if strings.Contains(server, ":") {
			return "", fmt.Errorf("%q is not HOST or HOST:PORT (an IPv6 address with a port is [ADDRESS]:PORT): %w", server, err)
		}
		return net.JoinHostPort(server, "53"), nil
	}
	if host == "" || port == "" {
		return "", fmt.Errorf("%q is not HOST or HOST:PORT", server)
	}
	return server, nil
}

// key returns the key's name as named.conf writes it: without the trailing dot.
func (r *RFC2136) key() string { return strings.TrimSuffix(r.keyName, ".") }

// Server returns the server's address, host:port.
func (r *RFC2136) Server() string { return r.server }

// Zone returns the zone's name, canonical: "demo.example.com".
func (r *RFC2136) Zone() string { return r.zone }

// check canonicalises and validates a record's name and type, and refuses a name outside the zone.
func (r *RFC2136) check(name, rrtype string) (string, error) {
	name = dnstasks.CanonicalName(name)
	if err := dnstasks.ValidateName(name); err != nil {
		return "", fmt.Errorf("DNS record name: %w", err)
	}
	if !dnstasks.Supported(rrtype) {
		return "", fmt.Errorf("DNS record %s: type %q is not one kubeup manages (A, AAAA, CNAME, TXT)", name, rrtype)
	}
	if !dnstasks.InZone(name, r.zone) {
		return "", fmt.Errorf("DNS record %s: %w %s on server %s: use a name that ends in .%s, or another zone",
			name, dnstasks.ErrOutsideZone, r.zone, r.server, r.zone)
	}
	return name, nil
}

// Get asks the server for the record set of name and type; nil, nil when there is none.
func (r *RFC2136) Get(ctx context.Context, name, rrtype string) (*dnstasks.RecordSet, error) {
	name, err := r.check(name, rrtype)
	if err != nil {
		return nil, err
	}
	m := new(dns.Msg)
	m.SetQuestion(name+".", dns.StringToType[rrtype])
	m.RecursionDesired = false
	in, err := r.exchange(ctx, m, "querying "+name+" "+rrtype)
	if err != nil {
		return nil, err
	}
	if in.Rcode == dns.RcodeNameError {
		return nil, nil
	}
	// Only the records of the name and type asked: not the target of a CNAME, nor what the server adds.
	zn := &zone{origin: r.zone, rrs: in.Answer}
	for _, rs := range zn.sets() {
		if rs.Name == name && rs.Type == rrtype {
			return &rs, nil
		}
	}
	return nil, nil
}

// List transfers the zone from the server (AXFR) and returns its record sets of the types dnstasks manages,
// sorted by name then type.
func (r *RFC2136) List(ctx context.Context) ([]dnstasks.RecordSet, error) {
	// An SOA query first: its answer says, better than a failed transfer can, whether the key and the zone are
	// right (miekg/dns drops the answer of a refused transfer and keeps only an error text).
	m := new(dns.Msg)
	m.SetQuestion(r.zone+".", dns.TypeSOA)
	m.RecursionDesired = false
	if _, err := r.exchange(ctx, m, "querying the SOA of the zone"); err != nil {
		return nil, err
	}
	rrs, err := r.transfer(ctx)
	if err != nil {
		return nil, err
	}
	return (&zone{origin: r.zone, rrs: rrs}).sets(), nil
}

// Upsert replaces the record set of rs's name and type with rs, in one UPDATE message: delete the set, add the
// records.
func (r *RFC2136) Upsert(ctx context.Context, rs dnstasks.RecordSet) error {
	if err := rs.Validate(); err != nil {
		return fmt.Errorf("DNS server %s, zone %s: %w", r.server, r.zone, err)
	}
	if _, err := r.check(rs.Name, rs.Type); err != nil {
		return err
	}
	zn := &zone{origin: r.zone}
	zn.add(rs)
	m := r.update(rs.Name, rs.Type)
	m.Insert(zn.rrs)
	what := fmt.Sprintf("updating %s %s", rs.Name, rs.Type)
	if _, err := r.exchange(ctx, m, what); err != nil {
		return err
	}
	got, err := r.Get(ctx, rs.Name, rs.Type)
	if err != nil {
		return fmt.Errorf("reading back %s %s after its update: %w", rs.Name, rs.Type, err)
	}
	if got == nil || got.TTL != rs.TTL || !slices.Equal(got.Values, rs.Values) {
		return fmt.Errorf("DNS server %s, zone %s: %s: the server accepted the update but serves %s: a CNAME cannot share its name with other records, and a server ignores an update that would make it so (RFC 2136, section 3.4.2.2): delete the other records of %s first",
			r.server, r.zone, what, describeSet(got), rs.Name)
	}
	return nil
}

func describeSet(rs *dnstasks.RecordSet) string {
	if rs == nil {
		return "no such record"
	}
	return fmt.Sprintf("TTL %d, %s", rs.TTL, strings.Join(rs.Values, " "))
}

// Delete removes the record set of name and type. An absent one is not an error.
func (r *RFC2136) Delete(ctx context.Context, name, rrtype string) error {
	name, err := r.check(name, rrtype)
	if err != nil {
		return err
	}
	_, err = r.exchange(ctx, r.update(name, rrtype), fmt.Sprintf("deleting %s %s", name, rrtype))
	return err
}

// update returns an UPDATE message of the zone whose first change deletes the record set of name and type.
func (r *RFC2136) update(name, rrtype string) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(r.zone + ".")
	m.RemoveRRset([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: name + ".", Rrtype: dns.StringToType[rrtype], Class: dns.ClassINET}}})
	return m
}

// client returns a TCP client that signs with the key and verifies the server's signatures.
func (r *RFC2136) client() *dns.Client {
	return &dns.Client{Net: "tcp", Timeout: r.timeout, TsigSecret: map[string]string{r.keyName: r.secret.Reveal()}}
}

// exchange signs m, sends it, and returns the answer when its code is NOERROR or, for a query, NXDOMAIN; any other
// outcome is a classified error that says what was being done (what).
func (r *RFC2136) exchange(ctx context.Context, m *dns.Msg, what string) (*dns.Msg, error) {
	m.SetTsig(r.keyName, r.algorithm, tsigFudge, time.Now().Unix())
	in, _, err := r.client().ExchangeContext(ctx, m, r.server)
	if in != nil && in.Rcode != dns.RcodeSuccess {
		if err := r.rcodeError(in, what); err != nil {
			return nil, err
		}
		return in, nil // NXDOMAIN, authoritative
	}
	if err != nil {
		return nil, r.netError(ctx, err, what)
	}
	if in.Opcode == dns.OpcodeQuery && !in.Authoritative {
		return nil, fmt.Errorf("DNS server %s, zone %s: %s: the server's answer is not authoritative: give the provider a primary server of zone %s", r.server, r.zone, what, r.zone)
	}
	return in, nil
}

// rcodeError classifies an answer whose code is not NOERROR. NXDOMAIN to a query is no error: the caller sees it.
func (r *RFC2136) rcodeError(in *dns.Msg, what string) error {
	prefix := fmt.Sprintf("DNS server %s, zone %s: %s", r.server, r.zone, what)
	code := dns.RcodeToString[in.Rcode]
	if in.Opcode == dns.OpcodeQuery && in.Rcode == dns.RcodeNameError {
		if in.Authoritative {
			return nil
		}
		return fmt.Errorf("%s: the server's answer is not authoritative: give the provider a primary server of zone %s", prefix, r.zone)
	}
	if t := in.IsTsig(); t != nil && t.Error != dns.RcodeSuccess {
		return fmt.Errorf("%s: %w: the server rejects TSIG key %s (%s): %s", prefix, engine.ErrAccessDenied, r.key(), dns.RcodeToString[int(t.Error)], tsigAdvice(int(t.Error), r.key()))
	}
	switch in.Rcode {
	case dns.RcodeServerFailure:
		return engine.Retryable(fmt.Errorf("%s: the server failed (SERVFAIL): is zone %s loaded? see the server's log", prefix, r.zone))
	case dns.RcodeRefused, dns.RcodeNotAuth:
		return fmt.Errorf("%s: %w: the server answers %s to key %s for zone %s: its configuration (BIND: update-policy or allow-update, and allow-transfer, of the zone) must allow key %s, and it must be a primary server of the zone",
			prefix, engine.ErrAccessDenied, code, r.key(), r.zone, r.key())
	case dns.RcodeNotZone:
		return fmt.Errorf("%s: %w %s (NOTZONE): the server does not hold the zone, or the name is not in it", prefix, dnstasks.ErrOutsideZone, r.zone)
	case dns.RcodeNotImplemented:
		return fmt.Errorf("%s: the server does not implement it (NOTIMP): does it accept dynamic updates (RFC 2136)?", prefix)
	}
	return fmt.Errorf("%s: the server answers %s", prefix, code)
}

// tsigAdvice says how to fix the TSIG error code.
func tsigAdvice(code int, key string) string {
	switch code {
	case dns.RcodeBadSig:
		return "the secret differs from the server's: give the secret of key " + key + " that the server has"
	case dns.RcodeBadKey:
		return "the server knows no key " + key + " of that algorithm: give a key from its configuration"
	case dns.RcodeBadTime:
		return "this machine's clock and the server's differ by more than 5 minutes: synchronise them"
	}
	return "check the key's name, algorithm and secret against the server's"
}

// netError classifies an error of the exchange itself: the context's end as it is, a network error or timeout
// as retryable, anything else (an answer whose signature does not verify) as terminal.
func (r *RFC2136) netError(ctx context.Context, err error, what string) error {
	err = fmt.Errorf("DNS server %s, zone %s: %s: %w", r.server, r.zone, what, err)
	if ctx.Err() != nil {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
		return engine.Retryable(err)
	}
	if errors.Is(err, dns.ErrSig) || errors.Is(err, dns.ErrSecret) || errors.Is(err, dns.ErrTime) {
		return fmt.Errorf("%w: the answer's signature does not verify with TSIG key %s: check the key's secret", err, r.key())
	}
	return err
}

// transfer returns every record of the zone, by AXFR over a connection that ctx's end closes.
func (r *RFC2136) transfer(ctx context.Context) ([]dns.RR, error) {
	what := "transferring the zone (AXFR)"
	d := net.Dialer{Timeout: r.timeout}
	conn, err := d.DialContext(ctx, "tcp", r.server)
	if err != nil {
		return nil, r.netError(ctx, err, what)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	tr := &dns.Transfer{Conn: &dns.Conn{Conn: conn}, ReadTimeout: r.timeout, TsigSecret: map[string]string{r.keyName: r.secret.Reveal()}}
	m := new(dns.Msg)
	m.SetAxfr(r.zone + ".")
	m.SetTsig(r.keyName, r.algorithm, tsigFudge, time.Now().Unix())
	ch, err := tr.In(m, r.server)
	if err != nil {
		conn.Close()
		return nil, r.netError(ctx, err, what)
	}
	var rrs []dns.RR
	var failed error
	for env := range ch { // drained to the end: In's goroutine closes the connection and the channel
		if env.Error != nil && failed == nil {
			failed = env.Error
		}
		if failed == nil {
			rrs = append(rrs, env.RR...)
		}
	}
	if failed != nil {
		var ne net.Error
		if ctx.Err() != nil || errors.As(failed, &ne) || errors.Is(failed, net.ErrClosed) {
			return nil, r.netError(ctx, failed, what)
		}
		// miekg/dns reports the code of a refused transfer in its error's text only ("bad xfr rcode: 5").
		var code int
		if _, err := fmt.Sscanf(failed.Error(), "dns: bad xfr rcode: %d", &code); err == nil {
			return nil, r.rcodeError(&dns.Msg{MsgHdr: dns.MsgHdr{Opcode: dns.OpcodeQuery, Rcode: code}}, what)
		}
		return nil, r.netError(ctx, failed, what)
	}
	return rrs, nil
}
