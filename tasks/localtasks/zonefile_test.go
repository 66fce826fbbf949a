package localtasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

func newZoneFile(t *testing.T) *ZoneFile {
	t.Helper()
	z, err := NewZoneFile(filepath.Join(t.TempDir(), "dns", "example.com.zone"), "Example.COM.")
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// parsed reads the zone file as a DNS server would, with miekg/dns, independently of the code under test. It
// fails t when the file does not parse, or lacks the one SOA or the NS record a server needs.
func parsed(t *testing.T, z *ZoneFile) (soa *dns.SOA, rrs []string) {
	t.Helper()
	f, err := os.Open(z.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zp := dns.NewZoneParser(f, "", z.Path()) // no default origin: the file must say it
	ns := false
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		switch rr := rr.(type) {
		case *dns.SOA:
			if soa != nil {
				t.Errorf("%s has two SOA records", z.Path())
			}
			soa = rr
		case *dns.NS:
			ns = ns || rr.Hdr.Name == "example.com."
		default:
			rrs = append(rrs, strings.Join(strings.Fields(rr.String()), " "))
		}
	}
	if err := zp.Err(); err != nil {
		t.Fatalf("%s does not parse: %v", z.Path(), err)
	}
	if soa == nil || !ns {
		t.Fatalf("%s: SOA %v, NS at the apex %v: a DNS server needs both", z.Path(), soa, ns)
	}
	return soa, rrs
}

func mustUpsert(t *testing.T, z *ZoneFile, rs dnstasks.RecordSet) {
	t.Helper()
	if err := z.Upsert(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
}

// Every change rewrites a file that parses, with a larger serial; the file is created with a header and
// removed when the last record goes.
func TestZoneFileLifecycle(t *testing.T) {
	ctx := context.Background()
	z := newZoneFile(t)
	z.now = func() time.Time { return time.Unix(1_700_000_000, 0) } // the serial must grow even within a second
	if _, err := os.Stat(z.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the zone file exists before the first change: %v", err)
	}
	if err := z.Delete(ctx, "api.example.com", "A"); err != nil {
		t.Errorf("Delete without a file: %v", err)
	}

	steps := []struct {
		name   string
		change func() error
		want   []string // records besides the SOA and NS
	}{
		{name: "create", change: func() error {
			return z.Upsert(ctx, dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}})
		}, want: []string{"api.demo.example.com. 60 IN A 10.0.0.1"}},
		{name: "add", change: func() error {
			return z.Upsert(ctx, dnstasks.RecordSet{Name: "example.com", Type: "AAAA", TTL: 300, Values: []string{"2001:db8::1", "2001:db8::2"}})
		}, want: []string{"api.demo.example.com. 60 IN A 10.0.0.1", "example.com. 300 IN AAAA 2001:db8::1", "example.com. 300 IN AAAA 2001:db8::2"}},
		{name: "replace", change: func() error {
			return z.Upsert(ctx, dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 30, Values: []string{"10.0.0.2", "10.0.0.3"}})
		}, want: []string{"api.demo.example.com. 30 IN A 10.0.0.2", "api.demo.example.com. 30 IN A 10.0.0.3", "example.com. 300 IN AAAA 2001:db8::1", "example.com. 300 IN AAAA 2001:db8::2"}},
		{name: "delete", change: func() error { return z.Delete(ctx, "example.com", "AAAA") },
			want: []string{"api.demo.example.com. 30 IN A 10.0.0.2", "api.demo.example.com. 30 IN A 10.0.0.3"}},
	}
	var serial uint32
	for _, step := range steps {
		if err := step.change(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		soa, rrs := parsed(t, z)
		if soa.Serial <= serial {
			t.Errorf("%s: serial %d, want more than %d", step.name, soa.Serial, serial)
		}
		serial = soa.Serial
		if diff := cmp.Diff(step.want, rrs); diff != "" {
			t.Errorf("%s: records (-want +got):\n%s", step.name, diff)
		}
	}
	b, _ := os.ReadFile(z.Path())
	if !strings.HasPrefix(string(b), "; Created by kubeup.\n; kubeup manages this zone file") {
		t.Errorf("the zone file has no header saying kubeup manages it:\n%s", b)
	}
	if err := z.Delete(ctx, "api.demo.example.com", "A"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(z.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the zone file kubeup created is still there with no records left: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(z.Path()))
	if len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

// A zone file someone wrote is parsed with its directives, its records added by hand stay, and it is not removed
// when kubeup's records go.
func TestZoneFileHandEditsSurvive(t *testing.T) {
	ctx := context.Background()
	z := newZoneFile(t)
	hand := `; my zone
$ORIGIN example.com.
$TTL 3600
@	IN SOA ns1 admin 2030010101 3600 600 604800 60
	IN NS ns1
ns1	IN A 192.0.2.53
@	IN MX 10 mail ; the mail server
WWW	120 IN CNAME web.example.net.
`
	if err := os.MkdirAll(filepath.Dir(z.Path()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(z.Path(), []byte(hand), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := z.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []dnstasks.RecordSet{
		{Name: "ns1.example.com", Type: "A", TTL: 3600, Values: []string{"192.0.2.53"}},
		{Name: "www.example.com", Type: "CNAME", TTL: 120, Values: []string{"web.example.net"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	mustUpsert(t, z, dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}})
	soa, rrs := parsed(t, z)
	if soa.Serial != 2030010102 {
		t.Errorf("serial %d, want 2030010102", soa.Serial)
	}
	wantRRs := []string{
		"api.demo.example.com. 60 IN A 10.0.0.1",
		"example.com. 3600 IN MX 10 mail.example.com.",
		"ns1.example.com. 3600 IN A 192.0.2.53",
		"WWW.example.com. 120 IN CNAME web.example.net.",
	}
	if diff := cmp.Diff(wantRRs, rrs); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if err := z.Delete(ctx, "api.demo.example.com", "A"); err != nil {
		t.Fatal(err)
	}
	if err := z.Delete(ctx, "ns1.example.com", "A"); err != nil {
		t.Fatal(err)
	}
	if err := z.Delete(ctx, "www.example.com", "CNAME"); err != nil {
		t.Fatal(err)
	}
	if _, rrs := parsed(t, z); len(rrs) != 1 {
		t.Errorf("records left: %v, want the MX", rrs)
	}
	b, _ := os.ReadFile(z.Path())
	if strings.HasPrefix(string(b), createdMarker) {
		t.Errorf("a zone file kubeup did not create now says kubeup created it")
	}
}

func TestZoneFileRefusals(t *testing.T) {
	ctx := context.Background()
	z := newZoneFile(t)
	mustUpsert(t, z, dnstasks.RecordSet{Name: "api.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}})
	mustUpsert(t, z, dnstasks.RecordSet{Name: "www.example.com", Type: "CNAME", TTL: 60, Values: []string{"api.example.com"}})
	tests := []struct {
		name    string
		err     error
		wantErr string
	}{
		{name: "outside the zone", err: z.Upsert(ctx, dnstasks.RecordSet{Name: "api.example.org", Type: "A", Values: []string{"10.0.0.1"}}),
			wantErr: "DNS record api.example.org: name is outside the zone example.com of zone file"},
		{name: "outside the zone, Get", err: func() error { _, err := z.Get(ctx, "notexample.com", "A"); return err }(),
			wantErr: "name is outside the zone"},
		{name: "invalid", err: z.Upsert(ctx, dnstasks.RecordSet{Name: "api.example.com", Type: "A", Values: []string{"::1"}}),
			wantErr: "not an IPv4 address"},
		{name: "CNAME beside an A", err: z.Upsert(ctx, dnstasks.RecordSet{Name: "api.example.com", Type: "CNAME", Values: []string{"x.example.net"}}),
			wantErr: "api.example.com has a A record, and a CNAME cannot share its name"},
		{name: "A beside a CNAME", err: z.Upsert(ctx, dnstasks.RecordSet{Name: "www.example.com", Type: "A", Values: []string{"10.0.0.1"}}),
			wantErr: "www.example.com has a CNAME record"},
		{name: "CNAME at the apex", err: z.Upsert(ctx, dnstasks.RecordSet{Name: "example.com", Type: "CNAME", Values: []string{"x.example.net"}}),
			wantErr: "example.com has a SOA record"},
		{name: "unsupported type", err: z.Delete(ctx, "example.com", "SOA"), wantErr: `type "SOA" is not one the local provider manages`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, tt.name, tt.err, tt.wantErr)
		})
	}
	_, err := z.Get(ctx, "api.example.org", "A")
	if !errors.Is(err, dnstasks.ErrOutsideZone) {
		t.Errorf("Get outside the zone: %v, want dnstasks.ErrOutsideZone", err)
	}
}

func TestZoneFileParseError(t *testing.T) {
	z := newZoneFile(t)
	if err := os.MkdirAll(filepath.Dir(z.Path()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(z.Path(), []byte("$ORIGIN example.com.\napi IN A 10.0.0.1\nbad IN A not-an-address\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := z.List(context.Background())
	checkErr(t, "List", err, "parsing zone file "+z.Path()+": dns: bad A A: \"not-an-address\" at line: 3:")
}

// TXT values round-trip through the file: quotes, backslashes, semicolons, bytes outside ASCII, and values longer
// than one 255-byte character-string.
func TestZoneFileTXT(t *testing.T) {
	ctx := context.Background()
	z := newZoneFile(t)
	values := []string{"", `"quoted" \ back\slash; semi`, "ünïcödé\ttab", strings.Repeat("0123456789", 60), `\065`}
	for i, v := range values {
		rs := dnstasks.RecordSet{Name: fmt.Sprintf("t%d.example.com", i), Type: "TXT", TTL: 60, Values: []string{v}}
		mustUpsert(t, z, rs)
		got, err := z.Get(ctx, rs.Name, "TXT")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&rs, got); diff != "" {
			t.Errorf("TXT %q (-want +got):\n%s", v, diff)
		}
	}
	parsed(t, z)
}

// Writers lose nothing: many goroutines, through two ZoneFile values on the same file (as two processes would,
// kept apart by the flock alone).
func TestZoneFileConcurrentUpserts(t *testing.T) {
	ctx := context.Background()
	z1 := newZoneFile(t)
	z2, err := NewZoneFile(z1.Path(), "example.com")
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			z := []*ZoneFile{z1, z2}[i%2]
			rs := dnstasks.RecordSet{Name: fmt.Sprintf("n%d.example.com", i), Type: "A", TTL: 60, Values: []string{fmt.Sprintf("10.0.0.%d", i)}}
			if err := z.Upsert(ctx, rs); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := z1.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("%d records after %d concurrent upserts: %v", len(got), n, got)
	}
	if _, rrs := parsed(t, z1); len(rrs) != n {
		t.Errorf("%d records in the file, want %d", len(rrs), n)
	}
}

// An independent DNS server's checker loads the zone kubeup writes.
func TestZoneFileLoadsInBIND(t *testing.T) {
	checkzone, err := exec.LookPath("named-checkzone")
	if err != nil {
		e2e.CannotRun(t, "named-checkzone is not installed (`make e2e-deps` installs bind9): BIND's view of the zone file is not checked")
	}
	z := newZoneFile(t)
	mustUpsert(t, z, dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1", "10.0.0.2"}})
	mustUpsert(t, z, dnstasks.RecordSet{Name: "api.demo.example.com", Type: "AAAA", TTL: 60, Values: []string{"2001:db8::1"}})
	mustUpsert(t, z, dnstasks.RecordSet{Name: "www.demo.example.com", Type: "CNAME", TTL: 60, Values: []string{"api.demo.example.com"}})
	mustUpsert(t, z, dnstasks.RecordSet{Name: "demo.example.com", Type: "TXT", TTL: 60, Values: []string{`owner="kubeup" ü`, strings.Repeat("x", 300)}})
	out, err := exec.Command(checkzone, "example.com", z.Path()).CombinedOutput()
	if err != nil {
		t.Errorf("named-checkzone refuses the zone file: %v\n%s", err, out)
	}
}

func TestEscapeTXT(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b\c`, "\x00\xff", "ü"} {
		if got := unescapeTXT(escapeTXT(s)); got != s {
			t.Errorf("unescapeTXT(escapeTXT(%q)) = %q", s, got)
		}
	}
	if got := unescapeTXT(`a\`); got != `a\` {
		t.Errorf("a trailing backslash: %q", got)
	}
}

// A record that a DNS server could not serve, and that kubeup could not write back as it read it, is refused
// with the file's name and the fix, and nothing is written.
func TestZoneFileRefusesUnservableRecords(t *testing.T) {
	for _, tt := range []struct{ name, file, wantErr string }{
		// At the end of the file: with a newline after it, miekg/dns refuses it.
		{name: "no owner, no data", file: " MB ", wantErr: `record "\t0\tIN\tMB\t" is not one a DNS server can serve (it has no owner name): fix it or remove it`},
		{name: "no data", file: "api IN A\n", wantErr: `record "api.example.com.\t0\tIN\tA\t" is not one a DNS server can serve (it has no data)`},
		{name: "SOA without data", file: "@ IN SOA\n", wantErr: `record "example.com.\t0\tIN\tSOA\t  0 0 0 0 0" is not one a DNS server can serve (its wire form does not read back`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			z := newZoneFile(t)
			if err := os.MkdirAll(filepath.Dir(z.Path()), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(z.Path(), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := z.List(context.Background())
			checkErr(t, "List", err, z.Path()+": "+tt.wantErr)
			err = z.Upsert(context.Background(), dnstasks.RecordSet{Name: "x.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1"}})
			checkErr(t, "Upsert", err, tt.wantErr)
			if b, _ := os.ReadFile(z.Path()); string(b) != tt.file {
				t.Errorf("the refused zone file was rewritten:\n%s", b)
			}
		})
	}
}
