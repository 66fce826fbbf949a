package nodetasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"

	"kubeup.dev/kubeup/engine"
)

// Asset is a file downloaded from a URL and verified against its sha256: a binary such as kubelet, or an image
// tarball. A file already at Path with the right hash is kept (it is the cache); it is hashed on every run.
type Asset struct {
	// Path is the absolute path on the node, and the task's name.
	Path string
	// URL is where the file is downloaded from: http or https, or file, s3 or gs (a state store's, read through
	// NodeOptions.Open).
	URL string
	// SHA256 is the hex sha256 of the file: required. A download that does not match is a terminal error and
	// leaves no file behind.
	SHA256 string
	// Mode is the permission bits (0644 when nil).
	Mode *os.FileMode
	// After orders this asset after other tasks.
	After []engine.Task `kubeup:"-"`

	found *fileStat // what Find saw, for Render
}

var (
	_ engine.Resource[*Asset, *Node] = (*Asset)(nil)
	_ engine.Renderer[*Asset, *Node] = (*Asset)(nil)
)

func (a *Asset) Key() engine.Key     { return engine.Key{Type: "Asset", Name: a.Path} }
func (a *Asset) Deps() []engine.Task { return a.After }

// Find hashes the file at Path; nil when there is none. The URL is not recorded on the node: a file with the
// right hash is the right file, wherever it came from.
func (a *Asset) Find(ctx context.Context, n *Node) (*Asset, error) {
	p, err := n.hostPath(a.Path, false)
	if err != nil {
		return nil, err
	}
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, engine.FileError(err)
	}
	found := statOf(st)
	actual := &Asset{Path: a.Path, URL: a.URL, found: found}
	if found.typ != TypeFile {
		return actual, nil // an empty hash: replaced by the download, or refused by CheckChanges
	}
	actual.Mode = &found.mode
	if actual.SHA256, err = n.hashNodeFile(a.Path); err != nil {
		return nil, err
	}
	return actual, nil
}

// hashNodeFile returns the hex sha256 of the regular file at node path p (not following a symbolic link there).
func (n *Node) hashNodeFile(p string) (string, error) {
	f, err := n.openNodeFile(p, false)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", p, engine.FileError(err))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Validate checks the path, the hash's syntax, the URL's scheme and the mode's bits.
func (a *Asset) Validate() error {
	if err := checkNodePath("Path", a.Path); err != nil {
		return err
	}
	if err := checkSHA256(a.SHA256); err != nil {
		return err
	}
	if err := checkAssetURL(a.URL); err != nil {
		return err
	}
	return checkMode("Mode", a.Mode)
}

// checkSHA256 checks a hex sha256 field: required, 64 lower-case hex digits.
func checkSHA256(sha string) error {
	if sha == "" {
		return errors.New("field SHA256 is required: set it to the hex sha256 of the file at URL (sha256sum FILE)")
	}
	if b, err := hex.DecodeString(sha); err != nil || len(b) != sha256.Size {
		return fmt.Errorf("field SHA256: %q is not a sha256 in hex (64 characters 0-9a-f)", sha)
	}
	if lower := strings.ToLower(sha); lower != sha {
		return fmt.Errorf("field SHA256: write it in lowercase: %q", lower)
	}
	return nil
}

// checkAssetURL checks an asset's URL: http(s)://host/..., file:///abs/path, s3://bucket/key or gs://bucket/key.
func checkAssetURL(raw string) error {
	u, err := url.Parse(raw)
	ok := err == nil
	if ok {
		switch u.Scheme {
		case "http", "https", "s3", "gs":
			ok = u.Host != "" && (u.Scheme == "http" || u.Scheme == "https" || strings.Trim(u.Path, "/") != "")
		case "file":
			ok = (u.Host == "" || u.Host == "localhost") && strings.HasPrefix(u.Path, "/")
		default:
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("field URL: %q is not an http://, https://, file:///, s3:// or gs:// URL", raw)
	}
	return nil
}

func (a *Asset) CheckChanges(actual, expected, changes *Asset) error {
	if err := expected.Validate(); err != nil {
		return err
	}
	if actual != nil && actual.found != nil && actual.found.typ != TypeFile && actual.found.typ != TypeSymlink {
		return engine.Terminal(fmt.Errorf("%s is a %s, not a file: remove it", expected.Path, actual.found.typ))
	}
	return nil
}

// Render downloads the file when its hash differs, verifying the hash as it streams into a temporary file that
// is renamed over Path only when the hash matches; a mode change alone is made in place.
func (a *Asset) Render(ctx context.Context, n *Node, actual, expected, changes *Asset) error {
	mode := os.FileMode(0o644)
	if expected.Mode != nil {
		mode = *expected.Mode
	}
	if actual != nil && changes.SHA256 == "" {
		if err := n.chmodNode(expected.Path, mode); err != nil {
			return err
		}
		engine.Logger(ctx).Info("changed mode", "path", expected.Path, "mode", mode)
		return nil
	}
	var size int64
	err := n.writeAtomic(ctx, expected.Path, mode, -1, -1, func(w io.Writer) error {
		var err error
		size, err = n.download(ctx, expected.URL, expected.SHA256, w)
		return err
	})
	if err != nil {
		return err
	}
	engine.Logger(ctx).Info("downloaded asset", "path", expected.Path, "url", expected.URL, "bytes", size)
	return nil
}

// download copies the file at rawURL to w and checks its sha256 as it streams. Network failures, server errors
// and failed reads of a store are worth another try; a hash mismatch, a missing object or a client error is
// terminal.
func (n *Node) download(ctx context.Context, rawURL, sha string, w io.Writer) (int64, error) {
	body, err := n.openURL(ctx, rawURL)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(w, h), body)
	if err != nil {
		return size, engine.Retryable(fmt.Errorf("downloading %s: %w", rawURL, err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return size, engine.Terminal(&HashMismatchError{URL: rawURL, Got: got, Want: sha})
	}
	return size, nil
}

// HashMismatchError is a download whose sha256 is not the one the configuration names: nothing of it was kept.
type HashMismatchError struct {
	URL, Got, Want string
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("downloading %s: sha256 mismatch: got %s, want %s: the file at the URL is not the one the configuration names "+
		"(nothing of it was installed); fix the URL or the sha256 (`kubeup assets mirror` records the sha256 of what it copies)", e.URL, e.Got, e.Want)
}

// openURL opens the body at rawURL: over HTTP(S), or through NodeOptions.Open for a state store's URL.
func (n *Node) openURL(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	scheme, _, _ := strings.Cut(rawURL, "://")
	if scheme != "http" && scheme != "https" {
		if n.open == nil {
			return nil, engine.Terminal(fmt.Errorf("downloading %s: this node reads only http and https URLs", rawURL))
		}
		body, err := n.open(ctx, rawURL)
		if err != nil {
			return nil, fmt.Errorf("downloading %s: %w", rawURL, err)
		}
		return body, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", rawURL, err)
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return nil, engine.Retryable(fmt.Errorf("downloading %s: %w", rawURL, err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err := fmt.Errorf("downloading %s: %s", rawURL, resp.Status)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return nil, engine.Retryable(err)
		}
		return nil, err
	}
	return resp.Body, nil
}
