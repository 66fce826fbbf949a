package localtasks

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"kubeup.dev/kubeup/tasks/dnstasks"
)

// sentinelSecret is a TSIG secret (base64 of "sentinel-tsig-secret-of-kubeup-42") searched for in what the
// provider prints.
const sentinelSecret = "c2VudGluZWwtdHNpZy1zZWNyZXQtb2Yta3ViZXVwLTQy"

// TestRFC2136NeverShowsTheSecret: the RFC 2136 provider holds the TSIG secret protokube read from
// spec.local.dns.tsigSecretFile. Neither the provider printed in any form (%v, %+v, %#v: a log of it), nor an error
// of any call, whatever the server answers (a refusal, a failure, BADSIG for a secret it does not share, no
// answer), nor an error of NewRFC2136 for a secret that is not base64, shows the secret or a piece of it.
func TestRFC2136NeverShowsTheSecret(t *testing.T) {
	ctx := context.Background()
	rcode := func(code int) func(*dns.Msg) *dns.Msg {
		return func(req *dns.Msg) *dns.Msg { return new(dns.Msg).SetRcode(req, code) }
	}
	var shown strings.Builder
	for _, answer := range []func(*dns.Msg) *dns.Msg{
		rcode(dns.RcodeServerFailure), rcode(dns.RcodeRefused), rcode(dns.RcodeNotAuth), rcode(dns.RcodeNotZone),
		rcode(dns.RcodeNotImplemented), rcode(dns.RcodeSuccess),
		func(req *dns.Msg) *dns.Msg { time.Sleep(time.Second); return new(dns.Msg).SetReply(req) },
	} {
		f := startFakeServer(t) // it shares testSecret, not the sentinel: every signed message is BADSIG
		f.answer = answer
		r := f.provider(t, sentinelSecret)
		fmt.Fprintf(&shown, "%v %+v %#v %s\n", r, r, *r, r.secret)
		rs := dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}}
		for _, err := range []error{
			r.Upsert(ctx, rs), r.Delete(ctx, rs.Name, rs.Type),
			func() error { _, err := r.Get(ctx, rs.Name, rs.Type); return err }(),
			func() error { _, err := r.List(ctx); return err }(),
		} {
			if err == nil {
				t.Errorf("a call with a secret the server does not share succeeded")
				continue
			}
			fmt.Fprintf(&shown, "%v\n", err)
		}
	}
	for _, bad := range []string{sentinelSecret + "!", "!" + sentinelSecret, sentinelSecret[:len(sentinelSecret)-1]} {
		if _, err := NewRFC2136("127.0.0.1:53", "demo.example.com", "kubeup", "", bad); err == nil {
			t.Errorf("NewRFC2136 accepted a secret that is not base64")
		} else {
			fmt.Fprintf(&shown, "%v\n", err)
		}
	}
	for _, piece := range []string{sentinelSecret, sentinelSecret[:16], sentinelSecret[16:32], sentinelSecret[28:]} {
		if strings.Contains(shown.String(), piece) {
			t.Errorf("%q is shown:\n%s", piece, shown.String())
		}
	}
	if !strings.Contains(shown.String(), "BADSIG") {
		t.Errorf("the server never rejected the secret: the test is broken\n%s", shown.String())
	}
}
