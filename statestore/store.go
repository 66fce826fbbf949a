package statestore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Generation is an opaque version of one object, returned by Read and WriteIf and passed back to WriteIf as its
// precondition. What it holds depends on the backend: the hex sha256 of the content (file://), the ETag (s3://),
// the generation number (gs://). Compare generations only for equality, and only from the same store.
type Generation string

// Absent is the precondition "the object must not exist yet", for a WriteIf that creates.
const Absent Generation = ""

// ErrConflict is wrapped by the error of a WriteIf whose precondition no longer holds: the object was created,
// changed or deleted by someone else since the caller read it. Re-read, re-apply the change, write again.
var ErrConflict = errors.New("conflicting change")

// Store is a state store: a flat namespace of objects addressed by relative, slash-separated paths under one
// root (a directory or a bucket prefix). Every method is safe for concurrent use.
type Store interface {
	// URL is the canonical URL of the store's root, as Open understands it: file:///abs/dir, s3://bucket/prefix,
	// gs://bucket/prefix.
	URL() string
	// ReadFile returns the object's contents; an absent object is an error that matches fs.ErrNotExist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces the object atomically and unconditionally: a reader sees the old contents or the new,
	// never a mix.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Read returns the object's contents and generation; an absent object is an error that matches
	// fs.ErrNotExist.
	Read(ctx context.Context, path string) ([]byte, Generation, error)
	// WriteIf replaces the object atomically if its generation is still ifGen (Absent: if it does not exist),
	// and returns the new generation. Otherwise nothing is written and the error, which names the object,
	// matches ErrConflict.
	WriteIf(ctx context.Context, path string, data []byte, ifGen Generation) (Generation, error)
	// Delete removes the object. An absent object is not an error.
	Delete(ctx context.Context, path string) error
	// List returns the path of every object under the directory prefix (at any depth), sorted, relative to the
	// store's root: List(ctx, "demo") returns "demo/config" and "demo/nodeup/nodes", never "demo2/config".
	// The empty prefix lists the whole store. A prefix with no object under it gives an empty list.
	List(ctx context.Context, prefix string) ([]string, error)
	// Check says whether the store itself is there: the directory of a file:// store (a directory, not a file),
	// the bucket of an s3:// or gs:// one. A root that does not exist is an error that names it and matches
	// ErrNoStore; one that cannot be reached or read is an error that says why. A store whose root exists but
	// holds nothing is no error.
	Check(ctx context.Context) error
}

// ErrNoStore is wrapped by the error of Check when the store's root does not exist: no such directory or
// bucket. The file:// store makes its directory on the first write (CreatesRoot); no store makes a bucket.
var ErrNoStore = errors.New("the state store does not exist")

// CreatesRoot reports whether s makes its root itself on the first write, so that a root Check finds missing
// can still be written to: true for file://, false for s3:// and gs://, whose bucket must exist.
func CreatesRoot(s Store) bool {
	_, ok := s.(*fileStore)
	return ok
}

// noStore is the error of Check for a root that does not exist.
func noStore(root, what string) error {
	return fmt.Errorf("state store %s: %w: no such %s", root, ErrNoStore, what)
}

// EnvStateStore names the environment variable that holds the default state store URL.
const EnvStateStore = "KUBEUP_STATE_STORE"

// DefaultURL returns the state store to use when none is given: $KUBEUP_STATE_STORE if set, else
// file://$HOME/.kubeup/state.
func DefaultURL() (string, error) {
	if u := os.Getenv(EnvStateStore); u != "" {
		return u, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("default state store: %w (set %s)", err, EnvStateStore)
	}
	return "file://" + filepath.ToSlash(filepath.Join(home, ".kubeup", "state")), nil
}

// Open returns the store at rawURL: file:///abs/dir (or a bare absolute path), or scheme://bucket/prefix for a
// scheme this binary links (RegisterScheme): s3://bucket/prefix with statestore/s3store, gs://bucket/prefix with
// statestore/gsstore. It checks the URL and sets up the client, finding credentials (gs:// fails here when there
// are none); it does not contact the storage service, so a missing bucket or permission shows on first use.
func Open(ctx context.Context, rawURL string) (Store, error) {
	if strings.HasPrefix(rawURL, "/") {
		rawURL = "file://" + rawURL
	}
	// A file URL's path is taken literally, not percent-decoded, so that URL() round-trips for any directory.
	if rest, ok := strings.CutPrefix(rawURL, "file://"); ok {
		dir := strings.TrimPrefix(rest, "localhost")
		if !strings.HasPrefix(dir, "/") {
			return nil, fmt.Errorf("state store URL %q: a file URL names a local directory by its absolute path: file:///abs/dir", rawURL)
		}
		root := filepath.Clean(filepath.FromSlash(dir))
		if filepath.Dir(root) == root {
			// Listing the clusters walks the store: here, every file of the machine.
			return nil, fmt.Errorf("state store URL %q: the root directory %s cannot be a state store (listing its clusters would walk the whole filesystem): "+
				"give a directory of its own, such as file:///var/lib/kubeup/state", rawURL, root)
		}
		return newFileStore(root), nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("state store URL %q: %w", rawURL, err)
	}
	open := scheme(u.Scheme)
	switch {
	case u.Scheme == "file":
		return nil, fmt.Errorf("state store URL %q: a file URL names a local directory by its absolute path: file:///abs/dir", rawURL)
	case u.Scheme == "":
		forms := []string{"file:///abs/dir"}
		for _, s := range linkedSchemes()[1:] {
			forms = append(forms, s+"://bucket/prefix")
		}
		return nil, fmt.Errorf("state store URL %q: not a URL nor an absolute path (%s)", rawURL, strings.Join(forms, ", "))
	case open == nil && slices.Contains(knownSchemes, u.Scheme):
		return nil, fmt.Errorf("state store URL %q: this binary has no %s store (it has %s)", rawURL, u.Scheme, strings.Join(linkedSchemes(), ", "))
	case open == nil:
		return nil, fmt.Errorf("state store URL %q: unsupported scheme %q (this binary has %s)", rawURL, u.Scheme, strings.Join(linkedSchemes(), ", "))
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("state store URL %q: unexpected user, query or fragment", rawURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("state store URL %q: missing bucket: %s://bucket/prefix", rawURL, u.Scheme)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := CheckPath(prefix); err != nil {
			return nil, fmt.Errorf("state store URL %q: prefix: %w", rawURL, err)
		}
	}
	return open(ctx, Bucket{Scheme: u.Scheme, Name: u.Host, Prefix: prefix})
}

// CheckPath refuses what is not a relative, slash-separated object path: absolute paths, empty segments, "." and
// ".." and any segment starting with a dot (reserved for the file store's temporary files), NUL.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute: paths are relative to the store's root", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q contains a NUL byte", p)
	case strings.ContainsRune(p, '\\'):
		return fmt.Errorf("path %q contains a backslash: use forward slashes", p)
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("path %q has an empty segment", p)
		case seg == "." || seg == "..":
			return fmt.Errorf("path %q contains %q", p, seg)
		case strings.HasPrefix(seg, "."):
			return fmt.Errorf("path %q has a segment starting with a dot (reserved)", p)
		}
	}
	return nil
}

// checkPrefix is checkPath for List: the empty prefix (the whole store) is allowed, and so is one trailing slash.
func checkPrefix(prefix string) (string, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return "", nil
	}
	return prefix, CheckPath(prefix)
}

// location is how errors name an object: the store's URL joined with the path.
func location(root, p string) string {
	if p == "" {
		return root
	}
	return strings.TrimSuffix(root, "/") + "/" + p
}
