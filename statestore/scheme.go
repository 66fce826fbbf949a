package statestore

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

// knownSchemes are the schemes of the bucket stores kubeup has, whether this binary links them or not: Open tells
// a URL of one this binary did not link ("this binary has no gs store") from a scheme kubeup does not know.
var knownSchemes = []string{"gs", "s3"}

var (
	schemesMu sync.RWMutex
	schemes   = map[string]func(context.Context, Bucket) (Store, error){}
)

// RegisterScheme makes Open hand the URLs scheme://bucket/prefix to open, with the bucket and the prefix checked.
// open sets up the client and finds credentials; it need not contact the storage service (a missing bucket shows
// on first use, or in Check).
//
// A bucket store's package calls it from its init, and a binary links the schemes whose packages its main
// imports (import _ "kubeup.dev/kubeup/statestore/s3store"); file:// is built in. RegisterScheme panics, as
// for any programmer error at registration, when the scheme is empty, not lower-case letters and digits, "file",
// or registered already.
func RegisterScheme(scheme string, open func(ctx context.Context, b Bucket) (Store, error)) {
	if scheme == "" || strings.Trim(scheme, "abcdefghijklmnopqrstuvwxyz0123456789") != "" || scheme[0] < 'a' || open == nil {
		panic(fmt.Sprintf("statestore.RegisterScheme(%q): a scheme is lower-case letters and digits, starting with a letter, and needs an open function", scheme))
	}
	if scheme == "file" {
		panic(`statestore.RegisterScheme("file"): file:// is built in`)
	}
	schemesMu.Lock()
	defer schemesMu.Unlock()
	if _, dup := schemes[scheme]; dup {
		panic(fmt.Sprintf("statestore.RegisterScheme(%q): registered twice", scheme))
	}
	schemes[scheme] = open
}

// scheme returns the open function registered for scheme, nil if none is.
func scheme(name string) func(context.Context, Bucket) (Store, error) {
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	return schemes[name]
}

// linkedSchemes returns the schemes this binary opens, file first, the registered ones sorted.
func linkedSchemes() []string {
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	var names []string
	for name := range schemes {
		names = append(names, name)
	}
	slices.Sort(names)
	return append([]string{"file"}, names...)
}

// Bucket is where a bucket store's objects live: a bucket and a key prefix, from the URL scheme://bucket/prefix.
// Open hands it, checked, to the open function of the scheme; the store embeds it for its URL, its object keys
// and its messages.
type Bucket struct {
	Scheme string // as registered: s3, gs
	Name   string // the bucket's name
	Prefix string // the keys' prefix: a valid object path without leading or trailing slash, or empty
}

// URL is the store's canonical URL: scheme://bucket/prefix.
func (b Bucket) URL() string { return location(b.Scheme+"://"+b.Name, b.Prefix) }

// Object is an object's URL, for messages.
func (b Bucket) Object(p string) string { return location(b.URL(), p) }

// Key is an object's key in the bucket.
func (b Bucket) Key(p string) string {
	if b.Prefix == "" {
		return p
	}
	return b.Prefix + "/" + p
}

// KeyPrefix returns the key prefix that List lists the objects under prefix (a path of the store, which it
// checks, or empty for the whole store) with: "<Prefix>/<prefix>/".
func (b Bucket) KeyPrefix(prefix string) (string, error) {
	prefix, err := checkPrefix(prefix)
	if err != nil {
		return "", err
	}
	keyPrefix := ""
	if b.Prefix != "" {
		keyPrefix = b.Prefix + "/"
	}
	if prefix != "" {
		keyPrefix += prefix + "/"
	}
	return keyPrefix, nil
}

// Path returns the object path of a key List found; false for a key the store could not have written (outside
// the prefix, "a//b", "dir/" markers), which List leaves out.
func (b Bucket) Path(key string) (string, bool) {
	if b.Prefix != "" {
		var ok bool
		if key, ok = strings.CutPrefix(key, b.Prefix+"/"); !ok {
			return "", false
		}
	}
	return key, CheckPath(key) == nil
}

// NoBucket is the error of Check when the bucket does not exist: it names it and matches ErrNoStore.
func (b Bucket) NoBucket() error { return noStore(b.URL(), "bucket "+b.Name) }

// ErrNoSuchObject is what a bucket store makes of its service's answer that an object is absent: it matches
// fs.ErrNotExist, which is what callers test.
var ErrNoSuchObject error = noSuchObject{}

type noSuchObject struct{}

func (noSuchObject) Error() string        { return "no such object" }
func (noSuchObject) Is(target error) bool { return target == fs.ErrNotExist }

// Conflict is the error of a WriteIf whose precondition ifGen failed, for the object at the URL object: it
// matches ErrConflict and names the object.
func Conflict(object string, ifGen Generation) error {
	if ifGen == Absent {
		return fmt.Errorf("writing %s: %w: it already exists", object, ErrConflict)
	}
	return fmt.Errorf("writing %s: %w: it was changed or deleted since it was read", object, ErrConflict)
}
