package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/atomicfile"
	"kubeup.dev/kubeup/tasks/dnstasks"
)

// ZoneFile is a DNS zone kept in an RFC 1035 master file that a DNS server (BIND, Knot, CoreDNS' file plugin)
// can serve as is: $ORIGIN, $TTL, an SOA and an NS record, then the records. It is the local provider's
// dnstasks.Provider.
//
// The first Upsert creates the file, with a header that says kubeup manages it. Every change rewrites the whole
// file atomically and increases the SOA serial, so that a server reloading it sees the change. The file is
// parsed back with miekg/dns' zone parser, the one DNS servers in Go use: records added by hand are kept
// (comments are not). When the last record other than the SOA and the apex's NS records is deleted from a file
// kubeup created, the file is removed, so that deleting a cluster leaves nothing behind.
//
// Writers are serialised within the process, and across processes by a flock on the file's directory (see
// dirLock: a writer that waits says who holds the lock). Readers take no lock: the file is replaced atomically.
type ZoneFile struct {
	path   string
	origin string // the zone's canonical name
	lk     *dirLock
	now    func() time.Time
}

var _ dnstasks.Provider = (*ZoneFile)(nil)

// NewZoneFile returns the zone file at path for zone ("example.com"). Nothing is read or written yet.
func NewZoneFile(path, zone string) (*ZoneFile, error) {
	origin := dnstasks.CanonicalName(zone)
	if err := dnstasks.ValidateName(origin); err != nil {
		return nil, fmt.Errorf("DNS zone: %w", err)
	}
	if path == "" {
		return nil, fmt.Errorf("DNS zone %s: the local provider needs a zone file path", origin)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("zone file %s: %w", path, err)
	}
	base := filepath.Base(abs)
	isTemp := func(name string) bool { return atomicfile.IsTempOf(name, base) }
	return &ZoneFile{path: abs, origin: origin, now: time.Now, lk: newDirLock(filepath.Dir(abs), "zone file", isTemp)}, nil
}

// Path returns the zone file's path, absolute.
func (z *ZoneFile) Path() string { return z.path }

// Zone returns the zone's name, canonical: "example.com".
func (z *ZoneFile) Zone() string { return z.origin }

// check canonicalises and validates a record's name and type, and refuses a name outside the zone.
func (z *ZoneFile) check(name, rrtype string) (string, error) {
	name = dnstasks.CanonicalName(name)
	if err := dnstasks.ValidateName(name); err != nil {
		return "", fmt.Errorf("DNS record name: %w", err)
	}
	if !dnstasks.Supported(rrtype) {
		return "", fmt.Errorf("DNS record %s: type %q is not one the local provider manages", name, rrtype)
	}
	if !dnstasks.InZone(name, z.origin) {
		return "", fmt.Errorf("DNS record %s: %w %s of zone file %s: use a name that ends in .%s, or another zone",
			name, dnstasks.ErrOutsideZone, z.origin, z.path, z.origin)
	}
	return name, nil
}

// read parses the zone file; nil, nil when it does not exist.
func (z *ZoneFile) read(ctx context.Context) (*zone, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(z.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading zone file: %w", engine.FileError(err))
	}
	return parseZone(b, z.origin, z.path)
}

// Get returns the record set of name and type; nil, nil when there is none.
func (z *ZoneFile) Get(ctx context.Context, name, rrtype string) (*dnstasks.RecordSet, error) {
	name, err := z.check(name, rrtype)
	if err != nil {
		return nil, err
	}
	zn, err := z.read(ctx)
	if err != nil || zn == nil {
		return nil, err
	}
	for _, rs := range zn.sets() {
		if rs.Name == name && rs.Type == rrtype {
			return &rs, nil
		}
	}
	return nil, nil
}

// List returns every record set of the types dnstasks manages (A, AAAA, CNAME, TXT) in the zone, sorted by name
// then type. Other records in the file, the SOA and NS records among them, are kept but not listed.
func (z *ZoneFile) List(ctx context.Context) ([]dnstasks.RecordSet, error) {
	zn, err := z.read(ctx)
	if err != nil || zn == nil {
		return nil, err
	}
	return zn.sets(), nil
}

// Upsert creates or replaces the record set of rs's name and type, creating the file if need be. A CNAME cannot
// share its name with other records (RFC 1034, section 3.6.2), nor be the zone's own name.
func (z *ZoneFile) Upsert(ctx context.Context, rs dnstasks.RecordSet) error {
	if err := rs.Validate(); err != nil {
		return err
	}
	if _, err := z.check(rs.Name, rs.Type); err != nil {
		return err
	}
	return z.edit(ctx, func(zn *zone) (bool, error) {
		other, ok := zn.hasOther(rs.Name, rs.Type)
		if ok && (rs.Type == dnstasks.TypeCNAME || other == dnstasks.TypeCNAME) {
			return false, fmt.Errorf("DNS record %s %s: %s has a %s record, and a CNAME cannot share its name with other records: delete one of them",
				rs.Name, rs.Type, rs.Name, other)
		}
		zn.remove(rs.Name, rs.Type)
		zn.add(rs)
		return true, nil
	})
}

// Delete removes the record set of name and type. An absent one, or an absent file, is not an error.
func (z *ZoneFile) Delete(ctx context.Context, name, rrtype string) error {
	name, err := z.check(name, rrtype)
	if err != nil {
		return err
	}
	if _, err := os.Stat(z.path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return z.edit(ctx, func(zn *zone) (bool, error) {
		return zn.remove(name, rrtype), nil
	})
}

// edit changes the zone under the lock: change reports whether it changed anything. The file is created when
// it does not exist, and removed when kubeup created it and it holds nothing but the SOA and NS records.
func (z *ZoneFile) edit(ctx context.Context, change func(*zone) (bool, error)) error {
	dir := filepath.Dir(z.path)
	unlock, err := z.lk.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	zn, err := z.read(ctx)
	if err != nil {
		return err
	}
	exists := zn != nil
	if !exists {
		zn = newZone(z.origin)
	}
	changed, err := change(zn)
	if err != nil || !changed {
		return err
	}
	if zn.created && zn.onlyApex() {
		if !exists {
			return nil
		}
		if err := os.Remove(z.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the empty zone file: %w", engine.FileError(err))
		}
		if err := atomicfile.SyncDir(dir); err != nil {
			return fmt.Errorf("removing the empty zone file: %w", engine.FileError(err))
		}
		return nil
	}
	zn.bumpSerial(z.now())
	return writeAtomic(z.path, zn.format(), 0o644)
}
