package localtasks

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"kubeup.dev/kubeup/tasks/dnstasks"
)

// FuzzHostsBlock: whatever hosts file the hosts provider reads, (1) every byte outside its managed block is
// kept: the block, when there is one, is a run of whole lines from its BEGIN line to its END line and the rest is
// what the file held before and after them; (2) the file written back reads as the same record sets, with the
// same bytes outside the block, and writing it again gives the same bytes; (3) a valid record upserted into it
// reads back exactly, next to the records that were there, with the bytes outside the block untouched (a file
// without a block keeps all of its bytes first); (4) with every record deleted, the file is exactly what was
// outside the block. A file the provider refuses is an error naming the file and the line. The seeds are below
// and in testdata/fuzz/FuzzHostsBlock (inputs the fuzzer found).
func FuzzHostsBlock(f *testing.F) {
	const block = "# BEGIN kubeup demo.example.com\n# ttl api.demo.example.com A 300\n10.0.0.1 api.demo.example.com\n# END kubeup demo.example.com\n"
	for _, seed := range []string{
		"",
		userHosts,
		userHosts + block,
		block + userHosts,
		"127.0.0.1 localhost",
		"127.0.0.1 localhost\r\n# x\r\n" + strings.ReplaceAll(block, "\n", "\r\n"),
		"127.0.0.1 localhost\n#  BEGIN   kubeup demo.example.com.\n10.0.0.2 API.demo.example.com api.demo.example.com. etcd.demo.example.com # hand\n" +
			"10.0.0.1\tapi.demo.example.com\n\n# a note\n# ttl etcd.demo.example.com a 5\nfd00:0::1 api.demo.example.com\n# END kubeup demo.example.com",
		"# BEGIN kubeup other.example.com\n10.0.0.1 api.other.example.com\n# END kubeup other.example.com\n" + block,
		"# BEGIN kubeup demo.example.com\n# BEGIN kubeup other.example.com\n# END kubeup demo.example.com\n",
		"# END kubeup demo.example.com\n",
	} {
		f.Add([]byte(seed), "etcd-a", []byte{10, 0, 0, 9}, uint32(60))
	}
	f.Add([]byte(userHosts), "API", []byte(netip.MustParseAddr("fd00::1").AsSlice()), uint32(0))
	f.Add([]byte(block), "*", []byte{10, 0, 0, 9}, uint32(1))
	f.Fuzz(func(t *testing.T, content []byte, label string, addr []byte, ttl uint32) {
		const zone, path = "demo.example.com", "/etc/hosts"
		doc, err := parseHosts(content, zone, path)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "hosts file "+path+", line ") {
				t.Fatalf("error %q does not name the file and the line", err)
			}
			return
		}
		outside := checkOutside(t, content, doc)

		// (2) written back: the same records, the same bytes outside, idempotent.
		written := doc.format(zone)
		again := reparse(t, written, doc, outside)
		if diff := cmp.Diff(doc.list(), again.list()); diff != "" {
			t.Fatalf("the file as written has other record sets (-read +written):\n%s\nread:\n%q\nwritten:\n%q", diff, content, written)
		}
		if twice := again.format(zone); !bytes.Equal(written, twice) {
			t.Fatalf("writing the file again gives other bytes:\nfirst:\n%q\nsecond:\n%q", written, twice)
		}

		// (3) an upsert, as HostsFile.Upsert makes it.
		h := &HostsFile{path: path, zone: zone}
		rs := fuzzRecordSet(label+"."+zone, addr, ttl)
		if name, err := h.check(rs.Name, rs.Type); err == nil && name == rs.Name && rs.Validate() == nil {
			want := doc.list()
			doc.sets[hostsKey{rs.Name, rs.Type}] = &rs
			upserted := doc.format(zone)
			after := reparse(t, upserted, doc, outside)
			got := after.sets[hostsKey{rs.Name, rs.Type}]
			if got == nil || !cmp.Equal(*got, rs) {
				t.Fatalf("the record set upserted reads back as %+v, want %+v\nfile:\n%q", got, rs, upserted)
			}
			delete(after.sets, hostsKey{rs.Name, rs.Type})
			want = slices.DeleteFunc(want, func(o dnstasks.RecordSet) bool { return o.Name == rs.Name && o.Type == rs.Type })
			if diff := cmp.Diff(want, after.list(), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("the other record sets changed with the upsert (-before +after):\n%s", diff)
			}
			if !doc.block && !bytes.HasPrefix(upserted, content) {
				t.Fatalf("a file without a block does not keep its bytes first:\nread:\n%q\nwritten:\n%q", content, upserted)
			}
		}

		// (4) every record deleted: only what was outside the block is left.
		clear(doc.sets)
		if emptied := doc.format(zone); !bytes.Equal(emptied, outside) {
			t.Fatalf("with every record deleted the file is\n%q\nwant what was outside the block:\n%q", emptied, outside)
		}
	})
}

// checkOutside checks (1) and returns the bytes outside the block.
func checkOutside(t *testing.T, content []byte, doc *hostsDoc) []byte {
	t.Helper()
	if !doc.block {
		if !bytes.Equal(doc.before, content) || len(doc.after) > 0 {
			t.Fatalf("a file without a block is split: before %q, after %q", doc.before, doc.after)
		}
		return content
	}
	if !bytes.HasPrefix(content, doc.before) || !bytes.HasSuffix(content, doc.after) || len(doc.before)+len(doc.after) >= len(content) {
		t.Fatalf("before %q and after %q are not around a block of %q", doc.before, doc.after, content)
	}
	inside := string(content[len(doc.before) : len(content)-len(doc.after)])
	if len(doc.before) > 0 && doc.before[len(doc.before)-1] != '\n' {
		t.Fatalf("the block does not start a line: before it %q", doc.before)
	}
	lines := strings.Split(strings.TrimSuffix(inside, "\n"), "\n")
	if kind, z, ok := marker(strings.TrimRight(lines[0], "\r")); !ok || kind != "BEGIN" || z != "demo.example.com" {
		t.Fatalf("the block's first line %q is not its BEGIN line", lines[0])
	}
	if kind, z, ok := marker(strings.TrimRight(lines[len(lines)-1], "\r")); !ok || kind != "END" || z != "demo.example.com" {
		t.Fatalf("the block's last line %q is not its END line", lines[len(lines)-1])
	}
	return append(bytes.Clone(doc.before), doc.after...)
}

// reparse parses written, which must hold a block when doc has record sets, and checks that the bytes outside it
// are doc's.
func reparse(t *testing.T, written []byte, doc *hostsDoc, outside []byte) *hostsDoc {
	t.Helper()
	again, err := parseHosts(written, "demo.example.com", "written")
	if err != nil {
		t.Fatalf("the file as written does not parse: %v\nwritten:\n%q", err, written)
	}
	if len(doc.sets) == 0 {
		if !bytes.Equal(written, outside) {
			t.Fatalf("a file without records is written as\n%q\nwant\n%q", written, outside)
		}
		return again
	}
	if !again.block {
		t.Fatalf("the file as written has no block:\n%q", written)
	}
	wantBefore := doc.before
	if !doc.block && len(wantBefore) > 0 && wantBefore[len(wantBefore)-1] != '\n' {
		wantBefore = append(bytes.Clone(wantBefore), '\n') // the block starts a line of its own
	}
	if !bytes.Equal(again.before, wantBefore) || !bytes.Equal(again.after, doc.after) {
		t.Fatalf("the bytes outside the block changed: before %q -> %q, after %q -> %q", doc.before, again.before, doc.after, again.after)
	}
	return again
}

// fuzzRecordSet is the record set of name with the address addr (4 bytes: A, 16: AAAA) and a TTL in range.
func fuzzRecordSet(name string, addr []byte, ttl uint32) dnstasks.RecordSet {
	rs := dnstasks.RecordSet{Name: dnstasks.CanonicalName(name), Type: dnstasks.TypeA, TTL: int(ttl % (dnstasks.MaxTTL + 1))}
	a, ok := netip.AddrFromSlice(addr)
	if !ok {
		return rs // no value: not valid
	}
	if a.Is6() {
		rs.Type = dnstasks.TypeAAAA
	}
	rs.Values = []string{a.String()}
	return rs
}
