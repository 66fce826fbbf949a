package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

func newHostsFile(t *testing.T, content *string) *HostsFile {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hosts")
	if content != nil {
		if err := os.WriteFile(path, []byte(*content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	h, err := NewHostsFile(path, "Demo.Example.COM.")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const userHosts = "127.0.0.1\tlocalhost\n# a comment, kept\n::1 localhost ip6-localhost\n\n10.9.9.9 other.example.org  # trailing\n"

func TestHostsFileRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		initial *string
	}{
		{"missing file", nil},
		{"empty file", ptr("")},
		{"user's file", ptr(userHosts)},
		{"no final newline", ptr("127.0.0.1 localhost")},
		{"CRLF", ptr("127.0.0.1 localhost\r\n# x\r\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostsFile(t, tc.initial)
			api := dnstasks.RecordSet{Name: "api.demo.example.com", Type: "A", TTL: 300, Values: []string{"10.0.0.1", "10.0.0.2"}}
			api6 := dnstasks.RecordSet{Name: "api.demo.example.com", Type: "AAAA", TTL: 0, Values: []string{"fd00::1"}}
			etcd := dnstasks.RecordSet{Name: "etcd-a.internal.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.3"}}
			for _, rs := range []dnstasks.RecordSet{etcd, api, api6} {
				if err := h.Upsert(ctx, rs); err != nil {
					t.Fatal(err)
				}
			}
			got, err := h.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]dnstasks.RecordSet{api, api6, etcd}, got); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			rs, err := h.Get(ctx, "API.demo.example.com.", "A")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&api, rs); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
			// The bytes outside the block are the user's.
			content := readString(t, h.Path())
			before, _, _ := strings.Cut(content, "# BEGIN kubeup demo.example.com\n")
			if tc.initial != nil && !strings.HasPrefix(before, *tc.initial) {
				t.Errorf("the file's own lines changed: got\n%q\nbefore the block, want it to start with\n%q", before, *tc.initial)
			}
			// Replacing keeps one set of the name and type.
			api.Values, api.TTL = []string{"10.0.0.9"}, 30
			if err := h.Upsert(ctx, api); err != nil {
				t.Fatal(err)
			}
			if rs, _ := h.Get(ctx, api.Name, "A"); !cmp.Equal(&api, rs) {
				t.Errorf("Get after replace = %+v, want %+v", rs, api)
			}
			// Writing the same again changes no byte.
			st1, _ := os.Stat(h.Path())
			if err := h.Upsert(ctx, api); err != nil {
				t.Fatal(err)
			}
			if st2, _ := os.Stat(h.Path()); !os.SameFile(st1, st2) {
				t.Error("an Upsert that changes nothing rewrote the file")
			}
			for _, rs := range []dnstasks.RecordSet{api, api6, etcd, etcd} {
				if err := h.Delete(ctx, rs.Name, rs.Type); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := h.List(ctx); err != nil || len(got) != 0 {
				t.Errorf("List after deleting all = %v, %v", got, err)
			}
			// The block is gone: the file is what it was (with a newline added where it lacked one), or gone.
			b, err := os.ReadFile(h.Path())
			switch {
			case tc.initial == nil || *tc.initial == "":
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a hosts file left empty is not removed: %v", err)
				}
			case strings.HasSuffix(*tc.initial, "\n"):
				if string(b) != *tc.initial {
					t.Errorf("after deleting every record the file is\n%q\nwant\n%q", b, *tc.initial)
				}
			default:
				if string(b) != *tc.initial+"\n" {
					t.Errorf("after deleting every record the file is\n%q\nwant\n%q", b, *tc.initial+"\n")
				}
			}
		})
	}
}

func TestHostsFileKeepsMode(t *testing.T) {
	h := newHostsFile(t, ptr(userHosts))
	if err := h.Upsert(context.Background(), dnstasks.RecordSet{Name: "demo.example.com", Type: "A", TTL: 1, Values: []string{"10.1.1.1"}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(h.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
}

// TestHostsFileBlock reads blocks as a person or an older kubeup may have left them.
func TestHostsFileBlock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		want    []dnstasks.RecordSet
		wantErr string
	}{
		{
			name: "written by hand",
			content: "127.0.0.1 localhost\n#  BEGIN   kubeup demo.example.com.\n" +
				"10.0.0.2 API.demo.example.com api.demo.example.com. etcd.demo.example.com # hand\n" +
				"10.0.0.1\tapi.demo.example.com\n\n# a note\n" +
				"# ttl etcd.demo.example.com a 5\n" +
				"# ttl gone.demo.example.com A 5\n" +
				"fd00:0::1 api.demo.example.com\n" +
				"# END kubeup demo.example.com\n",
			want: []dnstasks.RecordSet{
				{Name: "api.demo.example.com", Type: "A", TTL: 60, Values: []string{"10.0.0.1", "10.0.0.2"}},
				{Name: "api.demo.example.com", Type: "AAAA", TTL: 60, Values: []string{"fd00::1"}},
				{Name: "etcd.demo.example.com", Type: "A", TTL: 5, Values: []string{"10.0.0.2"}},
			},
		},
		{
			name:    "another zone's block is not ours",
			content: "# BEGIN kubeup other.example.com\n10.0.0.1 api.other.example.com\n# END kubeup other.example.com\n",
		},
		{
			name:    "BEGIN without END",
			content: "127.0.0.1 localhost\n# BEGIN kubeup demo.example.com\n10.0.0.1 api.demo.example.com\n",
			wantErr: `line 2: "# BEGIN kubeup demo.example.com" has no "# END kubeup demo.example.com" line after it`,
		},
		{
			name:    "END without BEGIN",
			content: "# END kubeup demo.example.com\n",
			wantErr: `line 1: "# END kubeup demo.example.com" without a "# BEGIN kubeup demo.example.com" line before it`,
		},
		{
			name: "two blocks",
			content: "# BEGIN kubeup demo.example.com\n# END kubeup demo.example.com\n" +
				"# BEGIN kubeup demo.example.com\n# END kubeup demo.example.com\n",
			wantErr: "line 3: a second block of zone demo.example.com (the first begins at line 1)",
		},
		{
			name:    "nested",
			content: "# BEGIN kubeup demo.example.com\n# BEGIN kubeup other.example.com\n# END kubeup demo.example.com\n",
			wantErr: "line 2: \"# BEGIN kubeup other.example.com\" inside the block of zone demo.example.com that begins at line 1",
		},
		{
			name:    "not an address",
			content: "# BEGIN kubeup demo.example.com\nten.0.0.1 api.demo.example.com\n# END kubeup demo.example.com\n",
			wantErr: `line 2: "ten.0.0.1" is not an IP address`,
		},
		{
			name:    "outside the zone",
			content: "# BEGIN kubeup demo.example.com\n10.0.0.1 api.example.com\n# END kubeup demo.example.com\n",
			wantErr: `line 2: name "api.example.com" is not in zone demo.example.com`,
		},
		{
			name:    "bad TTL",
			content: "# BEGIN kubeup demo.example.com\n# ttl api.demo.example.com A soon\n# END kubeup demo.example.com\n",
			wantErr: `line 2: TTL comment: "soon" is not a number of seconds`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := newHostsFile(t, &tc.content)
			got, err := h.List(ctx)
			if tc.wantErr != "" {
				want := fmt.Sprintf("hosts file %s, %s", h.Path(), tc.wantErr)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("List: error %v, want one containing %q", err, want)
				}
				// A write refuses too, and changes nothing.
				err := h.Upsert(ctx, dnstasks.RecordSet{Name: "x.demo.example.com", Type: "A", TTL: 1, Values: []string{"10.0.0.1"}})
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Upsert: error %v, want one containing %q", err, want)
				}
				if b := readString(t, h.Path()); b != tc.content {
					t.Errorf("the file changed:\n%s", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostsFileRefuses(t *testing.T) {
	ctx := context.Background()
	h := newHostsFile(t, nil)
	for _, tc := range []struct {
		name    string
		call    func() error
		wantErr string
		is      error
	}{
		{
			name:    "CNAME",
			call:    func() error { _, err := h.Get(ctx, "api.demo.example.com", "CNAME"); return err },
			wantErr: `a record of type "CNAME" cannot be kept in a hosts file`,
		},
		{
			name: "TXT upsert",
			call: func() error {
				return h.Upsert(ctx, dnstasks.RecordSet{Name: "t.demo.example.com", Type: "TXT", TTL: 1, Values: []string{"x"}})
			},
			wantErr: `a record of type "TXT" cannot be kept in a hosts file`,
		},
		{
			name:    "outside the zone",
			call:    func() error { return h.Delete(ctx, "api.example.com", "A") },
			wantErr: "api.example.com: name is outside the zone demo.example.com",
			is:      dnstasks.ErrOutsideZone,
		},
		{
			name: "wildcard",
			call: func() error {
				return h.Upsert(ctx, dnstasks.RecordSet{Name: "*.demo.example.com", Type: "A", TTL: 1, Values: []string{"10.0.0.1"}})
			},
			wantErr: "a hosts file cannot hold a wildcard name",
		},
		{
			name: "invalid set",
			call: func() error {
				return h.Upsert(ctx, dnstasks.RecordSet{Name: "a.demo.example.com", Type: "A", TTL: 1, Values: []string{"fd00::1"}})
			},
			wantErr: "is not an IPv4 address",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), h.Path()) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, h.Path(), tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
	if _, err := os.Stat(h.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused call created the file: %v", err)
	}
}

// TestHostsFileConcurrent has writers of one file in this process (two providers, so two semaphores) race: the
// flock must keep every record.
func TestHostsFileConcurrent(t *testing.T) {
	ctx := context.Background()
	h1 := newHostsFile(t, ptr(userHosts))
	h2, err := NewHostsFile(h1.Path(), h1.Zone())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	const n = 20
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := h1
			if i%2 == 1 {
				h = h2
			}
			errs <- h.Upsert(ctx, dnstasks.RecordSet{Name: fmt.Sprintf("n%02d.demo.example.com", i), Type: "A", TTL: i, Values: []string{fmt.Sprintf("10.0.0.%d", i)}})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := h1.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("%d record sets after %d concurrent Upserts: %v", len(got), n, got)
	}
	if !strings.HasPrefix(readString(t, h1.Path()), userHosts) {
		t.Error("the file's own lines changed")
	}
}

// TestHostsFileRecordTask applies a Record task through the engine, then checks that a dry run shows no change:
// the TTL survives the hosts file.
func TestHostsFileRecordTask(t *testing.T) {
	h := newHostsFile(t, ptr(userHosts))
	w := providerWorld{h}
	ttl := 120
	build := func() *engine.Graph[providerWorld] {
		g := engine.NewGraph[providerWorld]()
		engine.Add(g, &dnstasks.Record[providerWorld]{Name: "api.demo.example.com", Type: "A", TTL: &ttl, Values: []string{"10.0.0.2", "10.0.0.1"}})
		engine.Add(g, &dnstasks.Record[providerWorld]{Name: "api.demo.example.com", Type: "AAAA", Values: []string{"fd00::1"}})
		return g
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), w, build)
	got, err := h.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []dnstasks.RecordSet{
		{Name: "api.demo.example.com", Type: "A", TTL: 120, Values: []string{"10.0.0.1", "10.0.0.2"}},
		{Name: "api.demo.example.com", Type: "AAAA", TTL: dnstasks.DefaultTTL, Values: []string{"fd00::1"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// providerWorld is a dnstasks.World over one provider.
type providerWorld struct{ p dnstasks.Provider }

func (w providerWorld) DNSProvider() dnstasks.Provider { return w.p }
