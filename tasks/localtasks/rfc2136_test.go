package localtasks

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

const testSecret = "c2VjcmV0LW9mLXRoZS10ZXN0LWtleS0wMTIzNDU2Nzg5" // base64

func TestNewRFC2136(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		server, zone, key, alg, secret string
		wantServer, wantAlg, wantErr   string
	}{
		{name: "defaults", server: "10.0.0.53", zone: "Demo.Example.com.", key: "kubeup", secret: testSecret,
			wantServer: "10.0.0.53:53", wantAlg: dns.HmacSHA256},
		{name: "IPv6", server: "fd00::53", zone: "demo.example.com", key: "kubeup", alg: "HMAC-SHA512.", secret: testSecret,
			wantServer: "[fd00::53]:53", wantAlg: dns.HmacSHA512},
		{name: "host and port", server: "ns1.example.com:5353", zone: "demo.example.com", key: "k.", alg: "hmac-md5.sig-alg.reg.int", secret: testSecret,
			wantServer: "ns1.example.com:5353", wantAlg: dns.HmacMD5},
		{name: "host", server: "ns1.example.com", zone: "demo.example.com", key: "k", alg: "hmac-sha1", secret: testSecret,
			wantServer: "ns1.example.com:53", wantAlg: dns.HmacSHA1},
		{name: "no server", zone: "demo.example.com", key: "k", secret: testSecret,
			wantErr: "DNS zone demo.example.com: RFC 2136 server: no server: give the address of the zone's primary server"},
		{name: "bad server", server: "fd00::53:x:", zone: "demo.example.com", key: "k", secret: testSecret,
			wantErr: "is not HOST or HOST:PORT"},
		{name: "bad zone", server: "ns", zone: "demo..example.com", key: "k", secret: testSecret,
			wantErr: "DNS zone of the RFC 2136 server ns: \"demo..example.com\": empty label"},
		{name: "no key", server: "ns", zone: "demo.example.com", secret: testSecret,
			wantErr: "DNS zone demo.example.com on ns:53: the RFC 2136 provider needs the name of a TSIG key"},
		{name: "bad algorithm", server: "ns", zone: "demo.example.com", key: "k", alg: "sha256", secret: testSecret,
			wantErr: `TSIG key k: algorithm "sha256" is not one of hmac-md5, hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512`},
		{name: "no secret", server: "ns", zone: "demo.example.com", key: "k",
			wantErr: "TSIG key k has no secret"},
		{name: "secret not base64", server: "ns", zone: "demo.example.com", key: "k", secret: "not base64!",
			wantErr: "the secret of TSIG key k is not base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRFC2136(tc.server, tc.zone, tc.key, tc.alg, tc.secret)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Server() != tc.wantServer || r.algorithm != tc.wantAlg || r.Zone() != "demo.example.com" {
				t.Errorf("server %q, algorithm %q, zone %q; want %q, %q, demo.example.com", r.Server(), r.algorithm, r.Zone(), tc.wantServer, tc.wantAlg)
			}
		})
	}
}

// fakeServer is a DNS server on 127.0.0.1 that verifies TSIG as a real one does (miekg/dns' server) and answers
// what answer returns for each message.
type fakeServer struct {
	addr   string
	mu     sync.Mutex
	answer func(req *dns.Msg) *dns.Msg
	got    []*dns.Msg
}

func startFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{addr: l.Addr().String()}
	srv := &dns.Server{Listener: l, Net: "tcp", TsigSecret: map[string]string{"kubeup.": testSecret},
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
			f.mu.Lock()
			f.got = append(f.got, req)
			answer := f.answer
			f.mu.Unlock()
			var m *dns.Msg
			if t := req.IsTsig(); t != nil && w.TsigStatus() != nil {
				// As BIND answers a signature that does not verify: NOTAUTH, with BADSIG in the TSIG record.
				m = new(dns.Msg).SetRcode(req, dns.RcodeNotAuth)
				m.Extra = append(m.Extra, &dns.TSIG{Hdr: dns.RR_Header{Name: t.Hdr.Name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
					Algorithm: t.Algorithm, TimeSigned: t.TimeSigned, Fudge: t.Fudge, OrigId: req.Id, Error: dns.RcodeBadSig})
			} else {
				m = answer(req)
			}
			if req.IsTsig() != nil && w.TsigStatus() == nil {
				m.SetTsig("kubeup.", dns.HmacSHA256, 300, time.Now().Unix())
			}
			w.WriteMsg(m)
		})}
	srv.MsgAcceptFunc = func(dns.Header) dns.MsgAcceptAction { return dns.MsgAccept } // UPDATE too
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return f
}

func (f *fakeServer) provider(t *testing.T, secret string) *RFC2136 {
	t.Helper()
	r, err := NewRFC2136(f.addr, "demo.example.com", "kubeup", "", secret)
	if err != nil {
		t.Fatal(err)
	}
	r.timeout = 500 * time.Millisecond
	return r
}

// TestRFC2136Messages checks the messages sent: an UPDATE of the zone that deletes the set and adds the records,
// signed, in one message.
func TestRFC2136Messages(t *testing.T) {
	ctx := context.Background()
	f := startFakeServer(t)
	f.answer = func(req *dns.Msg) *dns.Msg {
		m := new(dns.Msg).SetReply(req)
		m.Authoritative = true
		if req.Opcode == dns.OpcodeQuery {
			rr, _ := dns.NewRR("api.demo.example.com. 60 IN A 10.0.0.2")
			rr2, _ := dns.NewRR("api.demo.example.com. 60 IN A 10.0.0.1")
			other, _ := dns.NewRR("target.demo.example.com. 60 IN A 10.0.0.9") // what a CNAME's answer may add
			m.Answer = []dns.RR{rr, rr2, other}
		}
		return m
	}
	r := f.provider(t, testSecret)
	rs := dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1", "10.0.0.2"}}
	if err := r.Upsert(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "API.demo.example.com.", "A"); err != nil {
		t.Fatal(err)
	}
	if len(f.got) != 3 {
		t.Fatalf("%d messages, want an UPDATE, a query reading it back, and an UPDATE", len(f.got))
	}
	want := []string{
		"api.demo.example.com.\t0\tCLASS255\tA\t", // ANY: delete the set
		"api.demo.example.com.\t60\tIN\tA\t10.0.0.1",
		"api.demo.example.com.\t60\tIN\tA\t10.0.0.2",
	}
	for i, m := range []*dns.Msg{f.got[0], f.got[2]} {
		if m.Opcode != dns.OpcodeUpdate || len(m.Question) != 1 || m.Question[0].Name != "demo.example.com." || m.Question[0].Qtype != dns.TypeSOA {
			t.Errorf("message %d is not an UPDATE of zone demo.example.com.:\n%v", i, m)
		}
		if m.IsTsig() == nil {
			t.Errorf("message %d is not signed", i)
		}
		var got []string
		for _, rr := range m.Ns {
			got = append(got, rr.String())
		}
		w := want
		if i == 1 {
			w = want[:1]
		}
		if strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("update section of message %d:\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
	if q := f.got[1]; q.Opcode != dns.OpcodeQuery || q.RecursionDesired || q.IsTsig() == nil {
		t.Errorf("the read-back query: %v", q)
	}
}

// TestRFC2136Errors checks how each kind of failure reaches the engine.
func TestRFC2136Errors(t *testing.T) {
	ctx := context.Background()
	rcode := func(code int, aa bool) func(*dns.Msg) *dns.Msg {
		return func(req *dns.Msg) *dns.Msg {
			m := new(dns.Msg).SetRcode(req, code)
			m.Authoritative = aa
			return m
		}
	}
	rs := dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}}
	for _, tc := range []struct {
		name      string
		answer    func(*dns.Msg) *dns.Msg
		secret    string
		class     engine.Class
		is        error
		wantErr   string
		getIsNone bool // Get returns nil, nil
	}{
		{name: "SERVFAIL", answer: rcode(dns.RcodeServerFailure, false), class: engine.ClassRetryable,
			wantErr: "the server failed (SERVFAIL): is zone demo.example.com loaded?"},
		{name: "REFUSED", answer: rcode(dns.RcodeRefused, false), is: engine.ErrAccessDenied,
			wantErr: "the server answers REFUSED to key kubeup for zone demo.example.com"},
		{name: "NOTAUTH", answer: rcode(dns.RcodeNotAuth, false), is: engine.ErrAccessDenied,
			wantErr: "the server answers NOTAUTH to key kubeup for zone demo.example.com"},
		{name: "NOTZONE", answer: rcode(dns.RcodeNotZone, false), is: dnstasks.ErrOutsideZone,
			wantErr: "name is outside the zone demo.example.com (NOTZONE)"},
		{name: "NOTIMP", answer: rcode(dns.RcodeNotImplemented, false), class: engine.ClassTerminal,
			wantErr: "does it accept dynamic updates (RFC 2136)?"},
		{name: "wrong secret", answer: rcode(dns.RcodeSuccess, true), secret: "d3Jvbmc=", is: engine.ErrAccessDenied,
			wantErr: "the server rejects TSIG key kubeup (BADSIG): the secret differs"},
		{name: "not authoritative", answer: rcode(dns.RcodeSuccess, false), class: engine.ClassTerminal,
			wantErr: "the server's answer is not authoritative: give the provider a primary server of zone demo.example.com"},
		{name: "timeout", answer: func(req *dns.Msg) *dns.Msg { time.Sleep(time.Second); return new(dns.Msg).SetReply(req) }, class: engine.ClassRetryable,
			wantErr: "i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFakeServer(t)
			f.answer = tc.answer
			secret := testSecret
			if tc.secret != "" {
				secret = tc.secret
			}
			r := f.provider(t, secret)
			for what, call := range map[string]func() error{
				"Upsert": func() error { return r.Upsert(ctx, rs) },
				"Delete": func() error { return r.Delete(ctx, rs.Name, rs.Type) },
				"Get":    func() error { _, err := r.Get(ctx, rs.Name, rs.Type); return err },
				"List":   func() error { _, err := r.List(ctx); return err },
			} {
				err := call()
				if tc.name == "not authoritative" && (what == "Upsert" || what == "Delete") {
					if what == "Delete" && err != nil {
						t.Errorf("Delete: %v: an UPDATE's answer need not be authoritative", err)
					}
					continue // Upsert fails reading back, as the others do
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), f.addr) {
					t.Errorf("%s: error %v, want one naming %s and containing %q", what, err, f.addr, tc.wantErr)
					continue
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("%s: error %v is not %v", what, err, tc.is)
				}
				if tc.is == nil && engine.ClassOf(err) != tc.class {
					t.Errorf("%s: error %v has class %v, want %v", what, err, engine.ClassOf(err), tc.class)
				}
			}
		})
	}
}

func TestRFC2136Unreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	r, err := NewRFC2136(addr, "demo.example.com", "kubeup", "", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Get(context.Background(), "api.demo.example.com", "A")
	if engine.ClassOf(err) != engine.ClassRetryable || !strings.Contains(err.Error(), addr) {
		t.Errorf("error %v (class %v), want a retryable one naming %s", err, engine.ClassOf(err), addr)
	}
	_, err = r.List(context.Background())
	if engine.ClassOf(err) != engine.ClassRetryable {
		t.Errorf("List: error %v (class %v), want a retryable one", err, engine.ClassOf(err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Delete(ctx, "api.demo.example.com", "A"); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context: %v", err)
	}
}

func TestRFC2136OutsideZone(t *testing.T) {
	r, err := NewRFC2136("127.0.0.1:1", "demo.example.com", "kubeup", "", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Delete(context.Background(), "api.example.com", "A")
	if !errors.Is(err, dnstasks.ErrOutsideZone) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error %v, want ErrOutsideZone naming the server", err)
	}
	_, err = r.Get(context.Background(), "api.demo.example.com", "MX")
	if err == nil || !strings.Contains(err.Error(), `type "MX" is not one kubeup manages`) {
		t.Errorf("error %v", err)
	}
}
