package localtasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// HostsFile keeps a zone's address records in a hosts file (/etc/hosts, or a file dnsmasq reads with
// --addn-hosts): a dnstasks.Provider for machines that resolve names through a hosts file rather than a DNS
// server. Only A and AAAA records fit a hosts file; the other types are refused with an error that says so.
//
// The records live in one managed block of the file, between the lines
//
//	# BEGIN kubeup demo.example.com
//	# END kubeup demo.example.com
//
// and every byte outside the block is kept exactly as it was. A file without the block gets it at its end (after
// a newline, when the file does not end in one); a missing file is created with just the block. When the last
// record is deleted the block goes, and a file left empty is removed. A block that is malformed (a BEGIN without
// its END, an END without its BEGIN, two blocks of the zone, a line that is not an address and names of the
// zone) is an error that names the file and the line, and nothing is written.
//
// A hosts file has no TTLs. So that Get returns what Upsert stored, and a dry run after an apply shows no change,
// the block keeps each record set's TTL in a comment line before its addresses:
//
//	# ttl api.demo.example.com A 60
//	10.0.0.1 api.demo.example.com
//
// An address line written by hand without one has dnstasks.DefaultTTL. Other comments in the block, and the
// grouping of several names on one line, are not kept: the block is rewritten whole, one address and name per
// line, sorted.
//
// Writers are serialised as ZoneFile's are: within the process, and across processes by a flock on the file's
// directory (dirLock). The file is replaced atomically (writeAtomic), so readers take no lock. Because it is
// replaced by a rename, a hosts file that is a mount point of its own (a container's /etc/hosts) cannot be
// written: give the provider a file in a directory it may write.
type HostsFile struct {
	path string
	zone string // canonical
	lk   *dirLock
}

var _ dnstasks.Provider = (*HostsFile)(nil)

// NewHostsFile returns the provider of zone ("demo.example.com") in the hosts file at path. Nothing is read or
// written yet.
func NewHostsFile(path, zone string) (*HostsFile, error) {
	z := dnstasks.CanonicalName(zone)
	if err := dnstasks.ValidateName(z); err != nil {
		return nil, fmt.Errorf("DNS zone of the hosts file %s: %w", path, err)
	}
	if path == "" {
		return nil, fmt.Errorf("DNS zone %s: the hosts provider needs the path of a hosts file", z)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("hosts file %s: %w", path, err)
	}
	base := filepath.Base(abs)
	isTemp := func(name string) bool { return atomicfile.IsTempOf(name, base) }
	return &HostsFile{path: abs, zone: z, lk: newDirLock(filepath.Dir(abs), "hosts file", isTemp)}, nil
}

// Path returns the hosts file's path, absolute.
func (h *HostsFile) Path() string { return h.path }

// Zone returns the zone's name, canonical: "demo.example.com".
func (h *HostsFile) Zone() string { return h.zone }

// check canonicalises and validates a record's name and type: an address type, and a name in the zone.
func (h *HostsFile) check(name, rrtype string) (string, error) {
	name = dnstasks.CanonicalName(name)
	if err := dnstasks.ValidateName(name); err != nil {
		return "", fmt.Errorf("hosts file %s: DNS record name: %w", h.path, err)
	}
	if rrtype != dnstasks.TypeA && rrtype != dnstasks.TypeAAAA {
		return "", fmt.Errorf("hosts file %s: DNS record %s: a record of type %q cannot be kept in a hosts file, which maps names to addresses (A and AAAA): use the zonefile or rfc2136 DNS provider for it",
			h.path, name, rrtype)
	}
	if strings.HasPrefix(name, "*.") {
		return "", fmt.Errorf("hosts file %s: DNS record %s: a hosts file cannot hold a wildcard name: use the zonefile or rfc2136 DNS provider for it", h.path, name)
	}
	if !dnstasks.InZone(name, h.zone) {
		return "", fmt.Errorf("DNS record %s: %w %s of hosts file %s: use a name that ends in .%s, or another zone",
			name, dnstasks.ErrOutsideZone, h.zone, h.path, h.zone)
	}
	return name, nil
}

// read parses the hosts file; a missing file reads as one without the block.
func (h *HostsFile) read(ctx context.Context) (*hostsDoc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(h.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &hostsDoc{sets: map[hostsKey]*dnstasks.RecordSet{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading hosts file: %w", engine.FileError(err))
	}
	return parseHosts(b, h.zone, h.path)
}

// Get returns the record set of name and type; nil, nil when there is none.
func (h *HostsFile) Get(ctx context.Context, name, rrtype string) (*dnstasks.RecordSet, error) {
	name, err := h.check(name, rrtype)
	if err != nil {
		return nil, err
	}
	doc, err := h.read(ctx)
	if err != nil {
		return nil, err
	}
	rs := doc.sets[hostsKey{name, rrtype}]
	if rs == nil {
		return nil, nil
	}
	c := *rs
	c.Values = slices.Clone(rs.Values)
	return &c, nil
}

// List returns every record set of the block, sorted by name then type.
func (h *HostsFile) List(ctx context.Context) ([]dnstasks.RecordSet, error) {
	doc, err := h.read(ctx)
	if err != nil {
		return nil, err
	}
	return doc.list(), nil
}

// Upsert creates or replaces the record set of rs's name and type, creating the file or the block if need be.
func (h *HostsFile) Upsert(ctx context.Context, rs dnstasks.RecordSet) error {
	if err := rs.Validate(); err != nil {
		return fmt.Errorf("hosts file %s: %w", h.path, err)
	}
	if _, err := h.check(rs.Name, rs.Type); err != nil {
		return err
	}
	rs.Values = slices.Clone(rs.Values)
	return h.edit(ctx, func(doc *hostsDoc) {
		doc.sets[hostsKey{rs.Name, rs.Type}] = &rs
	})
}

// Delete removes the record set of name and type. An absent one, or an absent file, is not an error.
func (h *HostsFile) Delete(ctx context.Context, name, rrtype string) error {
	name, err := h.check(name, rrtype)
	if err != nil {
		return err
	}
	if _, err := os.Stat(h.path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return h.edit(ctx, func(doc *hostsDoc) {
		delete(doc.sets, hostsKey{name, rrtype})
	})
}

// edit changes the block under the lock, and writes the file when its bytes change.
func (h *HostsFile) edit(ctx context.Context, change func(*hostsDoc)) error {
	unlock, err := h.lk.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	b, err := os.ReadFile(h.path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading hosts file: %w", engine.FileError(err))
	}
	doc, err := parseHosts(b, h.zone, h.path)
	if err != nil {
		return err
	}
	change(doc)
	out := doc.format(h.zone)
	switch {
	case exists && bytes.Equal(out, b), !exists && len(out) == 0:
		return nil
	case len(out) == 0:
		if err := os.Remove(h.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the empty hosts file: %w", engine.FileError(err))
		}
		if err := atomicfile.SyncDir(filepath.Dir(h.path)); err != nil {
			return fmt.Errorf("removing the empty hosts file: %w", engine.FileError(err))
		}
		return nil
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(h.path); err == nil {
		perm = fi.Mode().Perm()
	}
	return writeAtomic(h.path, out, perm)
}

// hostsKey is a record set's name and type.
type hostsKey struct{ name, rrtype string }

// hostsDoc is a hosts file split around the zone's block.
type hostsDoc struct {
	// before and after are the bytes outside the block, verbatim; without a block, before is the whole file.
	before, after []byte
	block         bool // the file has the block
	sets          map[hostsKey]*dnstasks.RecordSet
}

// Marker lines, as kubeup writes them; reading them, any run of blanks separates the words.
func beginLine(zone string) string { return "# BEGIN kubeup " + zone }
func endLine(zone string) string   { return "# END kubeup " + zone }

// ttlWord starts the comment line that keeps a record set's TTL: "# ttl NAME TYPE SECONDS".
const ttlWord = "ttl"

// marker reports whether line is a BEGIN or END line of a kubeup block, and of which zone.
func marker(line string) (kind, zone string, ok bool) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "#" || f[2] != "kubeup" || f[1] != "BEGIN" && f[1] != "END" {
		return "", "", false
	}
	return f[1], dnstasks.CanonicalName(f[3]), true
}

// parseHosts splits the file b around zone's block, and parses the block.
func parseHosts(b []byte, zone, path string) (*hostsDoc, error) {
	doc := &hostsDoc{sets: map[hostsKey]*dnstasks.RecordSet{}}
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("hosts file %s, line %d: %s", path, line, fmt.Sprintf(format, args...))
	}
	type entry struct {
		key   hostsKey
		value string
	}
	var (
		entries  []entry
		ttls     = map[hostsKey]int{}
		begin    int // the line of our BEGIN; 0 when outside the block
		first    int // the line of the BEGIN of the block already read
		startOff int
	)
	off, n := 0, 0
	for off < len(b) {
		n++
		end := bytes.IndexByte(b[off:], '\n')
		next := len(b)
		if end >= 0 {
			next = off + end + 1
		}
		line := strings.TrimRight(string(b[off:next]), "\r\n")
		kind, z, isMarker := marker(line)
		switch {
		case begin == 0 && isMarker && z == zone && kind == "BEGIN":
			if first != 0 {
				return nil, bad(n, "a second block of zone %s (the first begins at line %d): merge them into one, between one %q and one %q line",
					zone, first, beginLine(zone), endLine(zone))
			}
			begin, startOff = n, off
		case begin == 0 && isMarker && z == zone:
			return nil, bad(n, "%q without a %q line before it: add one, or remove the line", endLine(zone), beginLine(zone))
		case begin == 0:
			// a line outside the block: kept as is
		case isMarker && z == zone && kind == "END":
			doc.block = true
			doc.before, doc.after = b[:startOff], b[next:]
			first, begin = begin, 0
		case isMarker:
			return nil, bad(n, "%q inside the block of zone %s that begins at line %d: end that block with %q first",
				line, zone, begin, endLine(zone))
		default:
			key, ttl, values, err := parseHostsLine(line, zone)
			if err != nil {
				return nil, bad(n, "%v", err)
			}
			if ttl >= 0 {
				ttls[key] = ttl
			}
			for _, v := range values {
				entries = append(entries, entry{hostsKey{v[1], v[0]}, v[2]})
			}
		}
		off = next
	}
	if begin != 0 {
		return nil, bad(begin, "%q has no %q line after it: add one where the block ends", beginLine(zone), endLine(zone))
	}
	if !doc.block {
		doc.before = b
	}
	for _, e := range entries {
		rs := doc.sets[e.key]
		if rs == nil {
			rs = &dnstasks.RecordSet{Name: e.key.name, Type: e.key.rrtype, TTL: dnstasks.DefaultTTL}
			if ttl, ok := ttls[e.key]; ok {
				rs.TTL = ttl
			}
			doc.sets[e.key] = rs
		}
		rs.Values = append(rs.Values, e.value)
	}
	for _, rs := range doc.sets {
		slices.Sort(rs.Values)
		rs.Values = slices.Compact(rs.Values)
	}
	return doc, nil
}

// parseHostsLine parses one line inside the block. A TTL comment gives its key and TTL (values nil); an address
// line gives one [type, name, address] per name, and a TTL of -1; a blank line or another comment gives nothing.
func parseHostsLine(line, zone string) (key hostsKey, ttl int, values [][3]string, err error) {
	f := strings.Fields(line)
	if len(f) > 0 && strings.HasPrefix(f[0], "#") {
		if len(f) != 5 || f[0] != "#" || f[1] != ttlWord {
			return key, -1, nil, nil // a comment
		}
		name, rrtype := dnstasks.CanonicalName(f[2]), strings.ToUpper(f[3])
		if rrtype != dnstasks.TypeA && rrtype != dnstasks.TypeAAAA {
			return key, -1, nil, fmt.Errorf("TTL comment for a record of type %q: a hosts file holds A and AAAA records only", f[3])
		}
		t, err := strconv.Atoi(f[4])
		if err != nil || t < 0 || t > dnstasks.MaxTTL {
			return key, -1, nil, fmt.Errorf("TTL comment: %q is not a number of seconds between 0 and %d", f[4], dnstasks.MaxTTL)
		}
		return hostsKey{name, rrtype}, t, nil, nil
	}
	if i := strings.IndexByte(line, '#'); i >= 0 {
		f = strings.Fields(line[:i])
	}
	if len(f) == 0 {
		return key, -1, nil, nil
	}
	if len(f) == 1 {
		return key, -1, nil, fmt.Errorf("%q has an address and no name: write \"ADDRESS NAME\"", strings.TrimSpace(line))
	}
	a, perr := netip.ParseAddr(f[0])
	if perr != nil || a.Zone() != "" {
		return key, -1, nil, fmt.Errorf("%q is not an IP address: a line of the block is \"ADDRESS NAME...\"", f[0])
	}
	rrtype := dnstasks.TypeA
	if a.Is6() {
		rrtype = dnstasks.TypeAAAA
	}
	for _, name := range f[1:] {
		c := dnstasks.CanonicalName(name)
		if err := dnstasks.ValidateName(c); err != nil {
			return key, -1, nil, fmt.Errorf("name %q: %w", name, err)
		}
		if !dnstasks.InZone(c, zone) {
			return key, -1, nil, fmt.Errorf("name %q is not in zone %s, the block's: move it out of the block", name, zone)
		}
		if strings.HasPrefix(c, "*.") {
			return key, -1, nil, fmt.Errorf("name %q: a hosts file cannot hold a wildcard name: remove it", name)
		}
		values = append(values, [3]string{rrtype, c, a.String()})
	}
	return key, -1, values, nil
}

// list returns the record sets sorted by name then type.
func (d *hostsDoc) list() []dnstasks.RecordSet {
	var out []dnstasks.RecordSet
	for _, rs := range d.sets {
		c := *rs
		c.Values = slices.Clone(rs.Values)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b dnstasks.RecordSet) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return out
}

// format returns the file with the block rewritten from the record sets, or without it when there are none.
func (d *hostsDoc) format(zone string) []byte {
	sets := d.list()
	var out bytes.Buffer
	out.Write(d.before)
	if len(sets) > 0 {
		if !d.block && len(d.before) > 0 && d.before[len(d.before)-1] != '\n' {
			out.WriteByte('\n')
		}
		fmt.Fprintln(&out, beginLine(zone))
		fmt.Fprintln(&out, "# Written by kubeup: what you change in this block is lost. A hosts file has no TTLs:")
		fmt.Fprintln(&out, "# the \"# ttl NAME TYPE SECONDS\" lines keep them.")
		for _, rs := range sets {
			fmt.Fprintf(&out, "# %s %s %s %d\n", ttlWord, rs.Name, rs.Type, rs.TTL)
			for _, v := range rs.Values {
				fmt.Fprintf(&out, "%s %s\n", v, rs.Name)
			}
		}
		fmt.Fprintln(&out, endLine(zone))
	}
	out.Write(d.after)
	return out.Bytes()
}
